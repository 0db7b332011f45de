package mcp

import "sync/atomic"

// workers runs a session's request handlers. Each in-flight request runs on
// exactly one goroutine; a goroutine that finishes waits (up to maxIdle of
// them) for the next request instead of exiting, so its already-grown stack
// is reused: a fresh goroutine per call spends much of a cheap tool call
// copying its stack as the JSON codec's deep frames grow it. Idle workers
// exit when the session closes.
type workers struct {
	jobs    chan func() // unbuffered: a send succeeds only if a worker is idle
	idle    atomic.Int32
	maxIdle int32
	done    <-chan struct{}
}

func newWorkers(maxIdle int, done <-chan struct{}) *workers {
	return &workers{jobs: make(chan func()), maxIdle: int32(maxIdle), done: done}
}

// run starts job on an idle worker, or on a new one.
func (w *workers) run(job func()) {
	select {
	case w.jobs <- job:
	default:
		go w.loop(job)
	}
}

func (w *workers) loop(job func()) {
	for {
		job()
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case job = <-w.jobs:
			w.idle.Add(-1)
		case <-w.done:
			w.idle.Add(-1)
			return
		}
	}
}
