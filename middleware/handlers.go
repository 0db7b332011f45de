package middleware

import (
	"sync"
	"time"
)

// handlerPool runs the handlers of calls under Timeout on goroutines it
// keeps between calls. A handler then starts on a goroutine whose stack
// has grown already, and no goroutine is created or ended per call; the
// hand-off costs what waking a parked goroutine costs.
//
// The pool owns its goroutines: a worker that finds maxIdleWorkers
// waiting already ends at once, and one that stays idle for a whole
// period of the reaper (idleWorkerPeriod, armed only while workers wait)
// is ended by it.
type handlerPool struct {
	mu     sync.Mutex
	idle   []*handlerWorker // most recently used last
	reaper *time.Timer      // armed while idle is not empty
}

// handlerWorker is one goroutine of a handlerPool.
type handlerWorker struct {
	work  chan *deadlineRun // capacity 1; nil ends the worker
	stale bool              // idle since the reaper's last pass
}

const (
	maxIdleWorkers   = 256
	idleWorkerPeriod = 2 * time.Second
)

// handlers is the pool of every Timeout stage of the process.
var handlers handlerPool

// start runs r on an idle worker, or on a new one.
func (p *handlerPool) start(r *deadlineRun) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.work <- r
		return
	}
	p.mu.Unlock()
	go p.loop(&handlerWorker{work: make(chan *deadlineRun, 1)}, r)
}

// loop is a worker's goroutine: it runs r, then the runs handed to it,
// until it is told to end or may not wait.
func (p *handlerPool) loop(w *handlerWorker, r *deadlineRun) {
	for r != nil {
		r.run()
		if !p.park(w) {
			return
		}
		r = <-w.work
	}
}

// park puts w among the idle workers and reports whether it may wait.
func (p *handlerPool) park(w *handlerWorker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= maxIdleWorkers {
		return false
	}
	w.stale = false
	p.idle = append(p.idle, w)
	if p.reaper == nil {
		p.reaper = time.AfterFunc(idleWorkerPeriod, p.reap)
	} else if len(p.idle) == 1 {
		p.reaper.Reset(idleWorkerPeriod)
	}
	return true
}

// reap ends the workers that stayed idle since its last pass, marks the
// others, and runs again while any waits.
func (p *handlerPool) reap() {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.idle[:0]
	for _, w := range p.idle {
		if w.stale {
			w.work <- nil
			continue
		}
		w.stale = true
		keep = append(keep, w)
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	if len(p.idle) > 0 {
		p.reaper.Reset(idleWorkerPeriod)
	}
}
