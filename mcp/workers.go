package mcp

import "sync/atomic"

// job is work handed to a goroutine: a request to run (*Request), or a
// batch's requests (batchJobs).
type job interface{ run() }

// workers runs a session's request handlers. Each in-flight request runs on
// exactly one goroutine; a goroutine that finishes waits (up to maxIdle of
// them) for the next request instead of exiting, so its already-grown stack
// is reused: a fresh goroutine per call spends much of a cheap tool call
// copying its stack as the JSON codec's deep frames grow it. Idle workers
// exit when the session closes.
type workers struct {
	jobs    chan job // unbuffered: a send succeeds only if a worker is idle
	idle    atomic.Int32
	maxIdle int32
	done    <-chan struct{}
}

func newWorkers(maxIdle int, done <-chan struct{}) *workers {
	return &workers{jobs: make(chan job), maxIdle: int32(maxIdle), done: done}
}

// run starts job on an idle worker, or on a new one.
func (w *workers) run(j job) {
	select {
	case w.jobs <- j:
	default:
		go w.loop(j)
	}
}

func (w *workers) loop(j job) {
	for {
		j.run()
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case j = <-w.jobs:
			w.idle.Add(-1)
		case <-w.done:
			w.idle.Add(-1)
			return
		}
	}
}
