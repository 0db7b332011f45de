package mcp

import (
	"context"
	"sync/atomic"
	"time"
)

// requestValues is the root of a request's context (inflight.ctx is a
// context.WithCancel of it): its parent's values and deadline, plus the
// request itself (RequestFromContext) and its tools/call
// (ToolCallFromContext). The request's context is thus a standard one —
// contexts derived from it, even through context.WithValue, follow it
// without a goroutine. When a table watches the parent
// (requestTable.watch: a session's context, which every concurrent
// request would otherwise lock), requestValues has no cancellation of its
// own and the table aborts the request when the parent ends
// (inflight.abort); an aborted request has context.Canceled as its Err,
// even when the parent ended at a deadline. Any other parent that can end
// (a per-request session's, a Client's) is linked: requestValues ends with
// it, so the request's context registers with the parent as any child
// context does, and gets the parent's Err when it ends. It lives in the
// Request.
type requestValues struct {
	parent context.Context
	linked bool                     // Done and Err are parent's (see start)
	req    *Request                 // nil when a Client serves the request
	call   atomic.Pointer[ToolCall] // set once tools/call has made it
}

// Deadline implements context.Context: the parent's.
func (v *requestValues) Deadline() (time.Time, bool) { return v.parent.Deadline() }

// Done implements context.Context: the parent's when linked, else never
// (the request's context, derived from it, is cancelled instead).
func (v *requestValues) Done() <-chan struct{} {
	if v.linked {
		return v.parent.Done()
	}
	return nil
}

// Err implements context.Context: the parent's when linked.
func (v *requestValues) Err() error {
	if v.linked {
		return v.parent.Err()
	}
	return nil
}

// AfterFunc lets a linked request's context register with a parent that
// is neither a context.WithCancel nor derived from one the way the parent
// itself offers (see context.AfterFunc); the context package calls it only
// for such a parent.
func (v *requestValues) AfterFunc(f func()) (stop func() bool) {
	if a, ok := v.parent.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(v.parent, f)
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
// requestTable.watch). Any other parent that can end is linked: the
// request's context is its child (a parent derived from a
// context.WithCancel takes it among its children, without a goroutine
// or a callback). Call it before the request is in its table, and follow
// after.
func (f *inflight) start(parent context.Context, watched <-chan struct{}) {
	f.vals.parent = parent
	done := parent.Done()
	f.vals.linked = done != nil && done != watched
	f.ctx, f.cancel = context.WithCancel(&f.vals)
}

// follow makes a request whose parent its table watches end with it, if
// the parent ended before the table could see the request. Call it once
// the request is in its table.
func (f *inflight) follow(watched <-chan struct{}) {
	if done := f.vals.parent.Done(); done != nil && done == watched && f.vals.parent.Err() != nil {
		f.abort()
	}
}

// abort cancels the request's context.
func (f *inflight) abort() { f.cancel() }
