package mcp

import (
	"context"
	"sync/atomic"
	"time"
)

// requestValues is the root of a request's context (inflight.ctx is a
// context.WithCancel of it): its parent's values and deadline, plus the
// request itself (RequestFromContext) and its tools/call
// (ToolCallFromContext). The request's context is thus a standard one:
// contexts derived from it, even through context.WithValue, follow it
// without a goroutine. When the table of the request's session watches
// the parent's end (requestTable.watch), as it does a session's context,
// requestValues hides the parent's cancellation: the request's context
// does not register with the session's context, which every concurrent
// request would otherwise lock, and the table ends it instead. Otherwise
// (a per-request session's parent, a Client's) it passes the parent's
// cancellation on, and the request's context registers with the parent as
// it would through context.WithValue. It lives in the Request.
type requestValues struct {
	parent  context.Context
	follows bool                     // the parent's cancellation is passed on
	req     *Request                 // nil when a Client serves the request
	call    atomic.Pointer[ToolCall] // set once tools/call has made it
}

// Deadline implements context.Context: the parent's.
func (v *requestValues) Deadline() (time.Time, bool) { return v.parent.Deadline() }

// Done implements context.Context: the parent's when it follows it, else
// never (the table cancels the request's context).
func (v *requestValues) Done() <-chan struct{} {
	if v.follows {
		return v.parent.Done()
	}
	return nil
}

// Err implements context.Context (see Done).
func (v *requestValues) Err() error {
	if v.follows {
		return v.parent.Err()
	}
	return nil
}

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

// start derives the request's context from parent: watched is the Done
// channel of the context whose end the request's table watches (see
// requestTable.watch). Call it before the request is in its table, and
// checkWatched after.
func (f *inflight) start(parent context.Context, watched <-chan struct{}) {
	f.vals.parent = parent
	f.vals.follows = parent.Done() != watched
	f.ctx, f.cancel = context.WithCancel(&f.vals)
}

// checkWatched cancels the request if the parent its table watches ended
// before the table could see the request.
func (f *inflight) checkWatched() {
	if !f.vals.follows && f.vals.parent.Err() != nil {
		f.abort()
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
	ctx    context.Context // the handler's
	cancel context.CancelFunc
	// owner is the request whose own context the deadline derives from
	// (nil: it derives from another context, and follows it as usual).
	owner  *inflight
	view   valuesOf
	at     time.Time
	answer func() error
	timer  *time.Timer
	// phase: 0 armed, 1 the deadline answered, 2 disarmed.
	phase atomic.Int32
}

// WithResponseDeadline gives the call a response deadline at at, and
// returns the handler's context: ctx with that deadline. When the deadline
// passes before Disarm, the handler's context ends with
// context.DeadlineExceeded and the call is answered at once with answer(),
// through the same answer-once gate as the request; the handler keeps
// running and the Server drops what it returns later as late. A caller
// that goes away first (ctx ends) is answered nothing. Outside a Server
// nothing is answered early: the caller returns answer() once the handler
// has returned, when Disarm reports the deadline answered. Deadlines nest
// (an inner stage may arm a shorter one). Timers drive it, no goroutine.
// This is the only way to answer a tools/call before its handler returns.
func (c *ToolCall) WithResponseDeadline(ctx context.Context, at time.Time, answer func() error) (context.Context, *ResponseDeadline) {
	d := &c.deadline
	if d.call != nil { // armed before (nested stages): its timer may still run
		d = new(ResponseDeadline)
	}
	d.call, d.at, d.answer = c, at, answer
	if req := RequestFromContext(ctx); req != nil && ctx == req.f.ctx && req.f.deadline.Load() == nil {
		// The request's own context: the request ends the deadline with it
		// (abort), so the deadline need not register with it.
		d.owner, d.view.ctx = &req.f, ctx
		d.ctx, d.cancel = context.WithDeadline(&d.view, at)
		if req.f.deadline.Store(d); ctx.Err() != nil {
			d.cancel() // the request ended meanwhile
		}
	} else {
		d.ctx, d.cancel = context.WithDeadline(ctx, at)
	}
	d.timer = time.AfterFunc(time.Until(at), d.fire)
	return d.ctx, d
}

// fire runs when the deadline passes: once the handler's context has ended
// (its own timer fires at the same instant), the call is answered, unless
// the context ended otherwise (Disarm, or the caller went away).
func (d *ResponseDeadline) fire() {
	<-d.ctx.Done()
	if d.ctx.Err() == context.DeadlineExceeded && d.phase.CompareAndSwap(0, 1) {
		d.respond()
	}
}

// Disarm ends the deadline once the handler has returned, and reports
// whether the deadline answered the call: it passed while the handler ran
// (when the handler returned just as it passed, before the answer went
// out, the call is answered now). The handler's context ends.
func (d *ResponseDeadline) Disarm() (answered bool) {
	defer d.release()
	if !d.phase.CompareAndSwap(0, 2) {
		return true // fire answered
	}
	d.timer.Stop()
	if d.ctx.Err() == context.DeadlineExceeded && !time.Now().Before(d.at) {
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
