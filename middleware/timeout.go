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
// set, otherwise def (def <= 0 and no per-tool value: no deadline). The
// stages inside it (and the tool's handler) run on a goroutine of their
// own, under a context with that deadline. When the deadline passes, as
// net/http's TimeoutHandler does:
//
//   - the handler's context is cancelled with context.DeadlineExceeded;
//   - the stage returns a TIMEOUT tool error at once, which goes back up
//     the chain and the Server's middleware like any answer, while the
//     handler may still be running;
//   - once the deadline has passed the answer is TIMEOUT, whatever the
//     handler returns (also a value it returns as soon as its context
//     ends); what it returns later is logged, never sent;
//   - what the stages outside hold for the call (the Limiter's slot, Lock,
//     AuditExit's record) is released when the handler really returns:
//     they register it with mcp.ToolCall.AfterHandler, which this stage
//     holds back (mcp.ToolCall.Detach) while the handler runs on. A
//     graceful shutdown of the session waits for it too.
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

// handlerOutcome is what the stages inside Timeout returned, or the panic
// they raised.
type handlerOutcome struct {
	res      *mcp.CallToolResult
	err      error
	panicked any
	stack    []byte
}

// Phases of a call under Timeout: the handler runs, the caller was
// answered TIMEOUT, or the handler returned first.
const (
	phaseRunning int32 = iota
	phaseTimedOut
	phaseReturned
)

// runWithDeadline runs next on a goroutine under a deadline d from now,
// and returns its outcome, or TIMEOUT once the deadline has passed.
func runWithDeadline(ctx context.Context, c *Call, d time.Duration, next Handler) (*mcp.CallToolResult, error) {
	at := time.Now().Add(d)
	dctx, cancel := context.WithDeadline(ctx, at)
	end := c.Detach()
	out := make(chan handlerOutcome, 1)
	var phase atomic.Int32
	go func() { // ends when the handler returns
		var o handlerOutcome
		defer func() {
			if v := recover(); v != nil {
				o = handlerOutcome{panicked: v, stack: debug.Stack()}
			}
			cancel()
			if phase.CompareAndSwap(phaseRunning, phaseReturned) {
				end() // no stage outside waits yet: the caller still does
				out <- o
				return
			}
			// The caller was answered TIMEOUT: it reads nothing more.
			c.lateRes, c.lateErr = o.res, o.err
			c.logLate(d, at, o)
			end() // runs the hooks of the stages outside (AfterHandler)
		}()
		o.res, o.err = next(dctx, c)
	}()
	var o handlerOutcome
	select {
	case o = <-out:
	case <-dctx.Done():
		if ctx.Err() == nil && dctx.Err() == context.DeadlineExceeded && phase.CompareAndSwap(phaseRunning, phaseTimedOut) {
			c.timedOut.Store(true)
			return nil, timeoutError(c, d)
		}
		o = <-out // it returned meanwhile, or the caller's own end: wait for the handler
	}
	if o.panicked != nil {
		panic(o.panicked)
	}
	if ctx.Err() == nil && dctx.Err() == context.DeadlineExceeded && !time.Now().Before(at) {
		// It returned, but the deadline had passed before its outcome was
		// read: TIMEOUT, whatever it returned.
		c.timedOut.Store(true)
		c.lateRes, c.lateErr = o.res, o.err
		c.logLate(d, at, o)
		return nil, timeoutError(c, d)
	}
	return o.res, o.err
}

// logLate logs what a handler returned after its deadline.
func (c *Call) logLate(d time.Duration, at time.Time, o handlerOutcome) {
	args := []any{"tool", c.Name, "timeout", d, "overrun", time.Since(at)}
	switch {
	case o.panicked != nil:
		args = append(args, "panic", o.panicked, "stack", string(o.stack))
	case o.err != nil:
		args = append(args, "error", o.err)
	case o.res != nil:
		args = append(args, "isError", o.res.IsError)
	}
	c.Log().Warn("middleware: tool returned after its deadline; its result is not sent", args...)
}

func timeoutError(c *Call, d time.Duration) *mcp.StructuredError {
	return c.toolError(mcp.ErrTimeout, "tool "+quote(c.Name)+" did not finish within "+d.String(),
		map[string]any{"tool": c.Name, "timeoutMs": d.Milliseconds()})
}

func isContextError(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
}
