package mcp

import (
	"context"
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
// parent (a per-request session's parent, a Client's). It lives in the
// Request. (An aborted request
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

// abort cancels the request's context.
func (f *inflight) abort() { f.cancel() }
