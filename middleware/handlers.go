package middleware

import (
	"runtime"
	"sync"
	"sync/atomic"
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

	// awaitWindow and maxAwaitYields bound await.
	awaitWindow    = 20 * time.Microsecond
	maxAwaitYields = 1000
	// awaitSkips is how many calls park at once after one whose
	// handler outlasted awaitWindow (see awaitPolicy).
	awaitSkips = 16
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

// await receives from ch if a value arrives within window (and
// maxAwaitYields polls), yielding the processor between polls instead of
// parking.
//
// A caller that has handed a run to a parked worker awaits it so: the
// worker, made runnable on the caller's processor, runs there at once
// when the caller yields, and a handler that returns within the window
// sends its outcome to a caller that is runnable, not parked, so that
// nobody has to be woken. (A caller that parks at once costs, when a
// processor is idle, a wake-up of an idle thread by the runtime at the
// handler's return as well as at the hand-off.) A handler that takes
// longer costs at most the window of polling before the caller parks
// (and awaitPolicy keeps that from recurring call after call).
func await[T any](ch <-chan T, window time.Duration) (v T, ok bool) {
	var start time.Time
	for range maxAwaitYields {
		select {
		case v = <-ch:
			return v, true
		default:
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) >= window {
			break
		}
		runtime.Gosched()
	}
	return v, false
}

// awaitPolicy decides, for the calls of one Timeout stage, whether a
// caller awaits its handler (await) or parks at once. Polling pays only
// when handlers return within the window: after a call whose handler
// outlasted it, the next awaitSkips calls park at once, so that a stage
// whose handlers are slow (waiting on I/O, say) spends at most one window
// of polling per awaitSkips+1 calls.
type awaitPolicy struct {
	skip atomic.Int32 // calls left to park at once
}

// poll reports whether this call should await its handler.
func (a *awaitPolicy) poll() bool {
	if a.skip.Load() <= 0 {
		return true
	}
	a.skip.Add(-1)
	return false
}

// missed records a call whose handler outlasted the window.
func (a *awaitPolicy) missed() { a.skip.Store(awaitSkips) }
