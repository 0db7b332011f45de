package middleware

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Timeout returns the response-deadline stage.
// Each call gets a deadline: the tool's registry.ToolOptions.Timeout when
// set, otherwise def (def <= 0 and no per-tool value: no deadline). A call
// with a deadline runs the stages inside (and the tool's handler) on a
// goroutine of their own, under a context with that deadline, while the
// caller waits; the goroutines come from a pool that keeps them between
// calls (idle ones end after a few seconds), so none is created per call.
// A call without a deadline runs them on the caller's goroutine, at no
// cost. When the deadline passes, as net/http's TimeoutHandler does:
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
//     A graceful shutdown waits for it too: the drain of a connection
//     (mcp.Server.Run), and mcp.Server.StopTasks for a 2026-07-28
//     request, whose answer (over streamable HTTP, the POST's response)
//     is sent at the deadline.
//
// The hand-off to another goroutine and back costs more than a quick
// handler does (over stdio, about twice the server's CPU per call): for a
// default that covers every tool, Deadline is the cheaper stage, and
// Standard puts Deadline's default before a Timeout that applies each
// tool's own.
//
// A caller that goes away first is answered nothing by this deadline: the
// stage waits for the handler, whose context ends with the caller's. A
// panic inside before the deadline is raised again on the caller's
// goroutine, carrying the handler's stack, which Recover logs; after the
// deadline (also when the stage has returned already) it is logged with
// its stack, and the answer is TIMEOUT.
//
// A call the Server runs as a task (mcp.ToolCall.Task set, 2025-11-25) has
// no response waiting for it: def does not apply, its task's ttl and
// tasks/cancel bound it. A per-tool Timeout still does; when it passes, the
// task fails with TIMEOUT.
func Timeout(def time.Duration) Middleware {
	return func(next Handler) Handler {
		var ap awaitPolicy
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
			return runWithDeadline(ctx, c, d, next, &ap)
		}
	}
}

// Deadline returns the context-deadline stage: each call of a tool without
// its own registry.ToolOptions.Timeout runs the stages inside (and the
// tool's handler) on the caller's goroutine under a context that ends def
// from now (def <= 0: no deadline). A tool with its own Timeout is left to
// the Timeout stage, and a call the Server runs as a task (mcp.ToolCall.Task
// set) to its task's ttl and tasks/cancel, as under Timeout.
//
// A handler that honours its context returns at the deadline; whatever it
// returns then, or later, the answer is TIMEOUT once the deadline has
// passed, and what it returned is logged, never sent. The answer goes back
// up the chain when the handler returns, so the middleware outside sees
// the call end when the client does; a handler that ignores its context
// holds its answer (and its slot) until it returns. Use Timeout where the
// client must be answered at the deadline whatever the handler does.
//
// The stage costs one allocation and two clock readings per call: the
// context's timer is armed only when something waits on its Done channel
// (or derives a context from it). A panic inside is raised again as it
// is, unless the deadline had passed: then it is logged with its stack,
// and the answer is TIMEOUT.
func Deadline(def time.Duration) Middleware {
	return func(next Handler) Handler {
		if def <= 0 {
			return next
		}
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			if c.Task != nil {
				return next(ctx, c)
			}
			if t, err := c.Tool(); err == nil && toolTimeout(t) > 0 {
				return next(ctx, c)
			}
			return runUnderDeadline(ctx, c, def, next)
		}
	}
}

// runUnderDeadline runs next on the caller's goroutine under a context
// deadline d from now (see Deadline): its outcome, or TIMEOUT when the
// deadline passed before it returned.
func runUnderDeadline(ctx context.Context, c *Call, d time.Duration, next Handler) (res *mcp.CallToolResult, err error) {
	at := time.Now().Add(d)
	var dc *deadlineContext
	hctx := ctx // a caller's deadline that comes first stays the handler's
	if pd, ok := ctx.Deadline(); !ok || pd.After(at) {
		if c.dcUsed.CompareAndSwap(false, true) {
			dc = &c.dc
			dc.parent, dc.at = ctx, at
		} else {
			dc = &deadlineContext{parent: ctx, at: at}
		}
		hctx = dc
	}
	c.timeoutDepth++
	depth := c.timeoutDepth
	returned := false
	defer func() {
		if returned {
			return
		}
		// A panic (or runtime.Goexit, v nil).
		v := recover()
		late := endRun(ctx, dc, at)
		if v == nil || !late {
			if v != nil {
				panic(v)
			}
			return
		}
		res, err = nil, lateTimeout(c, d, at, depth, nil, nil, v, debug.Stack())
	}()
	res, err = next(hctx, c)
	returned = true
	if endRun(ctx, dc, at) {
		return nil, lateTimeout(c, d, at, depth, res, err, nil, nil)
	}
	return res, err
}

// endRun ends the handler's context dc (nil: the caller's own, which
// comes first) as the run returns, and reports whether the deadline at,
// not the caller, ended it: the deadline had passed while the caller
// still waited.
func endRun(ctx context.Context, dc *deadlineContext, at time.Time) (late bool) {
	end := ctx.Err()
	if end == nil && !time.Now().Before(at) {
		end, late = context.DeadlineExceeded, true
	}
	if dc != nil {
		dc.release(end)
	}
	return late
}

// Phases of a call under Timeout: the handler runs, the caller was
// answered TIMEOUT, or the handler returned first.
const (
	phaseRunning int32 = iota
	phaseTimedOut
	phaseReturned
)

// deadlineRun is one call under Timeout: everything the caller and the
// handler's goroutine share. Both hold it (refs) and the last to let go
// returns it to deadlineRuns, so that a call allocates no run of its own.
type deadlineRun struct {
	c      *Call
	next   Handler
	ctx    context.Context // the handler's, with the deadline
	cancel context.CancelFunc
	d      time.Duration
	at     time.Time
	phase  atomic.Int32
	refs   atomic.Int32
	done   chan struct{} // receives once when the handler returned first (capacity 1)
	end    func()        // mcp.ToolCall.Detach's, set before phaseTimedOut
	depth  int32         // the stage's nesting (Call.timeoutDepth), for Call.setLate

	res      *mcp.CallToolResult
	err      error
	panicked any
	stack    []byte
}

var deadlineRuns = sync.Pool{New: func() any { return &deadlineRun{done: make(chan struct{}, 1)} }}

// release lets go of r; the last holder returns it to the pool.
func (r *deadlineRun) release() {
	if r.refs.Add(-1) == 0 {
		*r = deadlineRun{done: r.done}
		deadlineRuns.Put(r)
	}
}

// valuesOf is a context with ctx's values and deadline, and no
// cancellation: a context derived from it registers with nobody.
type valuesOf struct{ ctx context.Context }

func (v *valuesOf) Deadline() (time.Time, bool) { return v.ctx.Deadline() }
func (v *valuesOf) Done() <-chan struct{}       { return nil }
func (v *valuesOf) Err() error                  { return nil }
func (v *valuesOf) Value(key any) any           { return v.ctx.Value(key) }
func (v *valuesOf) String() string              { return "middleware.valuesOf" }

// runWithDeadline runs next on a handler goroutine (handlers) under a
// deadline d from now, and returns its outcome, or TIMEOUT once the
// deadline has passed.
//
// The handler's context derives from the caller's values only (valuesOf),
// so that it registers with no parent and costs no allocation there: the
// caller, which waits anyway, cancels it when its own context ends first.
// Once the caller has returned TIMEOUT, the handler's context has ended
// already. (A caller whose own deadline comes first keeps the standard
// derivation, so that the handler sees context.DeadlineExceeded.)
func runWithDeadline(ctx context.Context, c *Call, d time.Duration, next Handler, ap *awaitPolicy) (*mcp.CallToolResult, error) {
	r := deadlineRuns.Get().(*deadlineRun)
	r.c, r.next, r.d, r.at = c, next, d, time.Now().Add(d)
	r.refs.Store(2)
	c.timeoutDepth++ // before the handler's goroutine starts: a stage inside counts on from here
	r.depth = c.timeoutDepth
	if pd, ok := ctx.Deadline(); ok && !pd.After(r.at) {
		r.ctx, r.cancel = context.WithDeadline(ctx, r.at)
	} else {
		// Not part of r, which is reused: the handler's context may be
		// used after the run ends.
		r.ctx, r.cancel = context.WithDeadline(&valuesOf{ctx}, r.at)
	}
	hctx, cancel, done := r.ctx, r.cancel, r.done
	defer cancel()
	handlers.start(r) // the handler's goroutine ends its run with finish
	// A handler that ends within awaitWindow is read without parking, so
	// that its end wakes no goroutine (see await and awaitPolicy).
	fast := false
	if ap.poll() {
		if _, fast = await(done, awaitWindow); !fast {
			ap.missed()
		}
	}
	if !fast {
		select {
		case <-done:
		case <-ctx.Done(): // the caller's end: the handler's context ends with it
			cancel()
			<-done
		case <-hctx.Done():
			if ctx.Err() == nil && hctx.Err() == context.DeadlineExceeded {
				end := c.Detach()
				r.end = end
				if r.phase.CompareAndSwap(phaseRunning, phaseTimedOut) {
					r.release()
					c.timedOut.Store(true)
					return nil, timeoutError(c, d)
				}
				end() // it returned meanwhile: nothing runs on, and the answer is TIMEOUT (below)
			}
			<-done // it returned meanwhile, or the caller's own end: wait for the handler
		}
	}
	res, err, panicked, stack, at, depth := r.res, r.err, r.panicked, r.stack, r.at, r.depth
	r.release()
	if ctx.Err() == nil && (hctx.Err() == context.DeadlineExceeded || !time.Now().Before(at)) {
		// It returned (or panicked), but the deadline had passed before
		// its outcome was read: TIMEOUT, whatever it did.
		return nil, lateTimeout(c, d, at, depth, res, err, panicked, stack)
	}
	if panicked != nil {
		if hp, ok := panicked.(*handlerPanic); ok {
			panic(hp) // from a Timeout inside: it carries the handler's stack already
		}
		panic(&handlerPanic{value: panicked, stack: stack})
	}
	return res, err
}

// handlerPanic is a panic of the handler raised again on the caller's
// goroutine by Timeout: it carries the handler's stack, which Recover logs
// (the caller's own stack does not show the tool's frames).
type handlerPanic struct {
	value any
	stack []byte // the handler goroutine's, at the panic
}

// String returns the panic value followed by the handler's stack, for a
// recover that does not know the type (mcp's own logs fmt.Sprint of it).
func (p *handlerPanic) String() string {
	return fmt.Sprint(p.value) + "\n[the tool's goroutine]\n" + string(p.stack)
}

// Unwrap returns the panic value when it is an error.
func (p *handlerPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

// Error implements error, as String.
func (p *handlerPanic) Error() string { return p.String() }

// run runs the handler, on a goroutine of handlers.
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
		done := r.done
		r.release() // the caller still holds r: it reads the outcome after done
		done <- struct{}{}
		return
	}
	c, end := r.c, r.end
	c.setLate(r.depth, r.res, r.err)
	logLate(c, r.d, r.at, r.res, r.err, r.panicked, r.stack)
	r.release()
	end()
}

// lateTimeout is the answer of a stage of nesting depth whose deadline
// (d, passed at at) passed before it read the handler's outcome: it marks
// the call timed out, records and logs what the handler returned (or its
// panic), and returns the TIMEOUT.
func lateTimeout(c *Call, d time.Duration, at time.Time, depth int32, res *mcp.CallToolResult, err error, panicked any, stack []byte) *mcp.StructuredError {
	c.timedOut.Store(true)
	c.setLate(depth, res, err)
	logLate(c, d, at, res, err, panicked, stack)
	return timeoutError(c, d)
}

// logLate logs what a handler returned after its deadline.
func logLate(c *Call, d time.Duration, at time.Time, res *mcp.CallToolResult, err error, panicked any, stack []byte) {
	args := []any{"tool", c.Name, "timeout", d, "overrun", time.Since(at)}
	switch {
	case panicked != nil:
		args = append(args, "panic", panicked, "stack", string(stack))
	case err != nil:
		args = append(args, "error", err)
	case res != nil:
		args = append(args, "isError", res.IsError)
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
