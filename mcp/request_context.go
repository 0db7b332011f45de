package mcp

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// requestValues is the root of a request's context (inflight.ctx is a
// context.WithCancel of it): its parent's values and deadline, plus the
// request itself (RequestFromContext) and its tools/call
// (ToolCallFromContext), and no cancellation of its own. The request's
// context is thus a standard one — contexts derived from it, even through
// context.WithValue, follow it without a goroutine — that does not
// register with its parent: when the parent ends, the request is aborted
// (inflight.abort), by its table when the table watches the parent
// (requestTable.watch: a session's context, which every concurrent
// request would otherwise lock), else by a context.AfterFunc on the
// parent (a per-request session's parent, a Client's). Either way the
// response deadline derived from the request's own context ends with it
// without registering either. It lives in the Request. (An aborted request
// has context.Canceled as its Err, even when the parent ended at a
// deadline.)
type requestValues struct {
	parent context.Context
	req    *Request                 // nil when a Client serves the request
	call   atomic.Pointer[ToolCall] // set once tools/call has made it
}

// Deadline implements context.Context: the parent's.
func (v *requestValues) Deadline() (time.Time, bool) { return v.parent.Deadline() }

// Done implements context.Context: never (the request's context, derived
// from it, is cancelled instead).
func (v *requestValues) Done() <-chan struct{} { return nil }

// Err implements context.Context.
func (v *requestValues) Err() error { return nil }

// Value implements context.Context: the request and its tools/call, then
// the parent's values.
func (v *requestValues) Value(key any) any {
	switch key.(type) {
	case requestKey:
		if v.req != nil {
			return v.req
		}
	case toolCallKey:
		if call := v.call.Load(); call != nil {
			return call
		}
	}
	return v.parent.Value(key)
}

// String names the context (fmt, as package context's own do).
func (v *requestValues) String() string { return "mcp.requestContext" }

// start derives the request's context from parent. Call it before the
// request is in its table, and follow after.
func (f *inflight) start(parent context.Context) {
	f.vals.parent = parent
	f.ctx, f.cancel = context.WithCancel(&f.vals)
}

// follow makes the request end with its parent: watched is the Done
// channel of the context whose end the request's table watches (see
// requestTable.watch); any other parent that can end gets an AfterFunc.
// Call it once the request is in its table.
func (f *inflight) follow(watched <-chan struct{}) {
	parent := f.vals.parent
	switch done := parent.Done(); {
	case done == nil:
	case done == watched:
		if parent.Err() != nil {
			f.abort() // it ended before the table could see the request
		}
	default:
		f.stopParent = context.AfterFunc(parent, f.abort)
	}
}

// abort cancels the request's context, and the response deadline derived
// from it.
func (f *inflight) abort() {
	f.cancel()
	if d := f.deadline.Load(); d != nil {
		d.cancel()
	}
}

// valuesOf is a context with ctx's values and deadline, and no
// cancellation: a deadline derived from it registers with nobody.
type valuesOf struct{ ctx context.Context }

func (v *valuesOf) Deadline() (time.Time, bool) { return v.ctx.Deadline() }
func (v *valuesOf) Done() <-chan struct{}       { return nil }
func (v *valuesOf) Err() error                  { return nil }
func (v *valuesOf) Value(key any) any           { return v.ctx.Value(key) }
func (v *valuesOf) String() string              { return "mcp.valuesOf" }

// ResponseDeadline is the response deadline of a tools/call, armed by
// ToolCall.WithResponseDeadline. Disarm it once the handler has returned.
type ResponseDeadline struct {
	call   *ToolCall
	parent context.Context // the caller's (or the request's, see owner)
	ctx    context.Context // the handler's
	cancel context.CancelFunc
	at     time.Time
	answer func() error
	timer  *time.Timer
	// phase: 0 armed, 1 the deadline answered (fire), 2 disarmed, 3
	// disarmed and answered (the handler saw the deadline first).
	phase atomic.Int32
	// owner is the request whose own context the deadline derives from
	// (nil: it derives from another context, and follows it as usual).
	owner *inflight
	view  valuesOf
}

// WithResponseDeadline gives the call a response deadline at at, and
// returns the handler's context: ctx with that deadline. When the deadline
// passes before Disarm, the handler's context ends with
// context.DeadlineExceeded and the call is answered at once with answer(),
// through the same answer-once gate as the request; the handler keeps
// running and the Server drops what it returns later as late. A caller
// that goes away first, or whose own earlier deadline ends ctx, is
// answered nothing by this deadline. Outside a Server nothing is answered
// early: the caller returns answer() once the handler has returned, when
// Disarm reports the deadline answered. Deadlines nest (an inner stage may
// arm a shorter one). Two timers drive it (the context's and the answer's);
// no goroutine is started per call. This is the only way to answer a
// tools/call before its handler returns.
func (c *ToolCall) WithResponseDeadline(ctx context.Context, at time.Time, answer func() error) (context.Context, *ResponseDeadline) {
	d := &c.deadline
	if d.call != nil { // armed before (nested stages): its timer may still run
		d = new(ResponseDeadline)
	}
	d.call, d.parent, d.at, d.answer = c, ctx, at, answer
	if req := RequestFromContext(ctx); req != nil && ctx == req.f.ctx && req.f.deadline.Load() == nil {
		// The request's own context, which only abort ends: the request
		// ends the deadline with it, so the deadline need not register
		// with it. d is complete before abort can see it.
		d.view.ctx = ctx
		d.ctx, d.cancel = context.WithDeadline(&d.view, at)
		if req.f.deadline.CompareAndSwap(nil, d) {
			d.owner = &req.f
			if ctx.Err() != nil {
				d.cancel() // the request ended meanwhile
			}
		} else { // another deadline holds the slot: follow ctx as usual
			d.cancel()
			d.ctx, d.cancel = context.WithDeadline(ctx, at)
		}
	} else {
		d.ctx, d.cancel = context.WithDeadline(ctx, at)
	}
	d.timer = time.AfterFunc(time.Until(at), d.fire)
	return d.ctx, d
}

// fire runs when the deadline passes: once the handler's context has ended
// (its own timer fires at this same instant), the call is answered, unless
// the context ended otherwise (Disarm, the caller went away) or an earlier
// deadline of the caller governs it.
func (d *ResponseDeadline) fire() {
	if dl, _ := d.ctx.Deadline(); dl.Before(d.at) {
		return // the caller's earlier deadline: the context has no timer of its own
	}
	<-d.ctx.Done()
	if d.ctx.Err() == context.DeadlineExceeded && d.parent.Err() == nil && d.phase.CompareAndSwap(0, 1) {
		d.respond()
	}
}

// Disarm ends the deadline, given the handler's error, and reports whether
// the deadline answered the call: it passed while the handler ran, or the
// handler saw it first and returned a context error before the answer went
// out, in which case it answers now. A handler that finished at the very
// edge with its own result keeps it. The handler's context ends. Calling
// it again reports the same.
func (d *ResponseDeadline) Disarm(handlerErr error) (answered bool) {
	defer d.release()
	if !d.phase.CompareAndSwap(0, 2) {
		p := d.phase.Load()
		return p == 1 || p == 3
	}
	d.timer.Stop()
	if d.ctx.Err() == context.DeadlineExceeded && d.parent.Err() == nil && !time.Now().Before(d.at) && handlerErr != nil &&
		(errors.Is(handlerErr, context.DeadlineExceeded) || errors.Is(handlerErr, context.Canceled)) {
		d.phase.Store(3)
		d.respond()
		return true
	}
	return false
}

// release ends the handler's context.
func (d *ResponseDeadline) release() {
	d.cancel()
	if d.owner != nil {
		d.owner.deadline.CompareAndSwap(d, nil)
	}
}

func (d *ResponseDeadline) respond() {
	c := d.call
	if c.respondEarly(nil, d.answer()) && c.Logger != nil {
		c.Logger.Debug("mcp: answered at the response deadline; the handler is still running", "tool", c.Name)
	}
}
