package middleware

import (
	"context"
	"errors"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Timeout returns the response-deadline stage.
// Each call gets a deadline: the tool's registry.ToolOptions.Timeout when
// set, otherwise def (def <= 0 and no per-tool value: no deadline). A call
// with a deadline runs the stages inside (and the tool's handler) on a
// goroutine of their own, under a context with that deadline; a call
// without one runs them on the caller's goroutine, at no cost. When the
// deadline passes, as net/http's TimeoutHandler does:
//
//   - the handler's context ends with context.DeadlineExceeded;
//   - the stage returns a TIMEOUT tool error at once, which goes back up
//     the chain and through the Server's middleware like any answer,
//     while the handler may still be running;
//   - once the deadline has passed the answer is TIMEOUT, whatever the
//     handler returns (also a value it returns as soon as its context
//     ends); what it returns after the stage returned is logged, never
//     sent;
//   - what the stages outside hold for the call (the Limiter's slot, Lock,
//     AuditExit's record) is released when the handler really returns:
//     this stage marks the call detached (mcp.ToolCall.Detach) while the
//     handler runs on, and they wait for it (mcp.ToolCall.AfterHandler).
//     A graceful shutdown of the session waits for it too.
//
// A caller that goes away first is answered nothing by this deadline: the
// stage waits for the handler, whose context ends with the caller's. A
// panic inside is raised again on the caller's goroutine, or logged when
// the stage has returned already.
//
// A call the Server runs as a task (mcp.ToolCall.Task set, 2025-11-25) has
// no response waiting for it: def does not apply, its task's ttl and
// tasks/cancel bound it. A per-tool Timeout still does; when it passes, the
// task fails with TIMEOUT.
func Timeout(def time.Duration) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			d := def
			if c.Task != nil {
				d = 0 // a task: see above
			}
			if t, err := c.Tool(); err == nil {
				if o := toolTimeout(t); o > 0 {
					d = o
				}
			}
			if d <= 0 {
				return next(ctx, c)
			}
			return runWithDeadline(ctx, c, d, next)
		}
	}
}

// Phases of a call under Timeout: the handler runs, the caller was
// answered TIMEOUT, or the handler returned first.
const (
	phaseRunning int32 = iota
	phaseTimedOut
	phaseReturned
)

// deadlineRun is one call under Timeout: everything the caller and the
// handler's goroutine share, in one allocation.
type deadlineRun struct {
	c      *Call
	next   Handler
	ctx    context.Context // the handler's, with the deadline
	cancel context.CancelFunc
	d      time.Duration
	at     time.Time
	phase  atomic.Int32
	done   chan struct{} // closed when the handler returned first
	end    func()        // mcp.ToolCall.Detach's, set before phaseTimedOut

	res      *mcp.CallToolResult
	err      error
	panicked any
	stack    []byte
}

// runWithDeadline runs next on a goroutine under a deadline d from now,
// and returns its outcome, or TIMEOUT once the deadline has passed.
func runWithDeadline(ctx context.Context, c *Call, d time.Duration, next Handler) (*mcp.CallToolResult, error) {
	r := &deadlineRun{c: c, next: next, d: d, at: time.Now().Add(d), done: make(chan struct{})}
	r.ctx, r.cancel = context.WithDeadline(ctx, r.at)
	defer r.cancel()
	go r.run() // ends when the handler returns
	select {
	case <-r.done:
	case <-r.ctx.Done():
		if ctx.Err() == nil && r.ctx.Err() == context.DeadlineExceeded {
			r.end = c.Detach()
			if r.phase.CompareAndSwap(phaseRunning, phaseTimedOut) {
				c.timedOut.Store(true)
				return nil, timeoutError(c, d)
			}
			r.end() // it returned meanwhile: nothing runs on
		}
		<-r.done // it returned meanwhile, or the caller's own end: wait for the handler
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
	if ctx.Err() == nil && (r.ctx.Err() == context.DeadlineExceeded || !time.Now().Before(r.at)) {
		// It returned, but the deadline had passed before its outcome
		// was read: TIMEOUT, whatever it returned.
		c.timedOut.Store(true)
		c.lateRes, c.lateErr = r.res, r.err
		r.logLate()
		return nil, timeoutError(c, d)
	}
	return r.res, r.err
}

// run is the handler's goroutine.
func (r *deadlineRun) run() {
	defer r.finish()
	r.res, r.err = r.next(r.ctx, r.c)
}

// finish hands the handler's outcome (or panic) to the caller, or, when
// the caller was answered TIMEOUT already, logs it and ends the detached
// call (the stages outside release what they hold).
func (r *deadlineRun) finish() {
	if v := recover(); v != nil {
		r.res, r.err, r.panicked, r.stack = nil, nil, v, debug.Stack()
	}
	if r.phase.CompareAndSwap(phaseRunning, phaseReturned) {
		close(r.done)
		return
	}
	r.c.lateRes, r.c.lateErr = r.res, r.err
	r.logLate()
	r.end()
}

// logLate logs what a handler returned after its deadline.
func (r *deadlineRun) logLate() {
	args := []any{"tool", r.c.Name, "timeout", r.d, "overrun", time.Since(r.at)}
	switch {
	case r.panicked != nil:
		args = append(args, "panic", r.panicked, "stack", string(r.stack))
	case r.err != nil:
		args = append(args, "error", r.err)
	case r.res != nil:
		args = append(args, "isError", r.res.IsError)
	}
	r.c.Log().Warn("middleware: tool returned after its deadline; its result is not sent", args...)
}

func timeoutError(c *Call, d time.Duration) *mcp.StructuredError {
	return c.toolError(mcp.ErrTimeout, "tool "+quote(c.Name)+" did not finish within "+d.String(),
		map[string]any{"tool": c.Name, "timeoutMs": d.Milliseconds()})
}

func isContextError(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
}
