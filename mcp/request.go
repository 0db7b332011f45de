package mcp

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// inflight is the one owner of a request's life, used by every method that
// runs user code (tools/call, resources/read, prompts/get,
// completion/complete, tasks/result, subscriptions/listen), in both eras.
// From begin to end it:
//
//   - holds the request in the session's table of in-flight requests, so
//     a duplicate id is refused and notifications/cancelled finds it;
//   - owns the request's context and cancels it when the request ends,
//     is cancelled, or the session closes;
//   - counts in the shutdown drain (inflightWG);
//   - recovers a panic of the handler (the server lives on);
//   - answers exactly once: the first of the handler's return, an early
//     answer (ToolCall.RespondEarly, e.g. middleware.Timeout's response
//     deadline) or a cancellation (which suppresses the answer) wins, and
//     whatever comes later is logged and dropped.
type inflight struct {
	ss     *Session
	r      responder
	key    string
	method string
	ctx    context.Context
	cancel context.CancelFunc
	// done is set once the request is answered or its answer
	// suppressed; it points into the ToolCall for tools/call, so that
	// RespondEarly and progress share it.
	done      *atomic.Bool
	ownDone   atomic.Bool
	early     *atomic.Bool // nil, or the ToolCall's earlyResponse
	call      *ToolCall    // a tools/call: answered by sendToolResponse
	prog      *Progress    // finished before the answer (requests other than tools/call)
	keepAlive bool         // a cancellation ends the request with an answer (subscriptions/listen)
	in        *Input       // a tools/call's input from its params (2026-07-28)
}

// errPanic is what a handler "returned" when it panicked; send maps it to
// the method's internal error.
type errPanic struct{ value any }

func (e *errPanic) Error() string { return fmt.Sprint("panic: ", e.value) }

// begin registers request m (answered through r) as in flight, with a
// context derived from parent. On a duplicate id it answers -32600 and
// returns nil. For a tools/call (call != nil) the call's own flags are the
// request's, and its outcome is answered as a tool result.
func (ss *Session) begin(m *jsonrpc.Message, r responder, parent context.Context, call *ToolCall) *inflight {
	var f *inflight
	if call != nil {
		f = &call.req // no allocation of its own for the hottest method
		*f = inflight{ss: ss, r: r, key: idKey(m.ID), method: m.Method, call: call, done: &call.responded, early: &call.earlyResponse}
	} else {
		f = &inflight{ss: ss, r: r, key: idKey(m.ID), method: m.Method}
		f.done = &f.ownDone
	}
	f.ctx, f.cancel = context.WithCancel(parent)
	ss.mu.Lock()
	if _, dup := ss.reqs[f.key]; dup {
		ss.mu.Unlock()
		f.cancel()
		r.error(&Error{Code: CodeInvalidRequest, Message: "Invalid Request: id is already in use by an in-flight request"})
		return nil
	}
	ss.reqs[f.key] = f
	ss.mu.Unlock()
	ss.inflightWG.Add(1)
	return f
}

// run runs fn on the calling goroutine, then ends the request: it answers
// with fn's outcome unless the request was answered or cancelled already.
func (f *inflight) run(fn func(ctx context.Context) (any, error)) {
	defer f.ss.inflightWG.Done()
	var res any
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				f.ss.log.Error("mcp: request handler panicked", "method", f.method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = nil, &errPanic{value: p}
			}
		}()
		res, err = fn(f.ctx)
	}()
	cancelled := f.ctx.Err() != nil
	f.end()
	if f.done.CompareAndSwap(false, true) {
		f.send(res, err)
		return
	}
	switch {
	case cancelled && (f.early == nil || !f.early.Load()):
		f.ss.log.Debug("mcp: response suppressed (request cancelled)", "method", f.method)
		if f.r.batch != nil {
			f.r.batch.skip()
		}
	default:
		f.ss.log.Warn("mcp: late result dropped (already answered)", "method", f.method, "outcome", "late_completed")
	}
}

// send answers with the handler's outcome.
func (f *inflight) send(res any, err error) {
	if f.call != nil {
		if tc, ok := res.(*TaskCreatedResult); ok { // a modern call became a task (tasks_modern_serve.go)
			f.r.result(tc)
			return
		}
		tr, _ := res.(*CallToolResult)
		f.ss.sendToolResponse(f.r, f.call, tr, err)
		return
	}
	if f.prog != nil {
		f.prog.finish() // no progress notification follows the response
	}
	f.r.answer(res, err)
}

// end cancels the request's context and removes it from the table.
func (f *inflight) end() {
	f.cancel()
	f.ss.mu.Lock()
	if f.ss.reqs[f.key] == f {
		delete(f.ss.reqs, f.key)
	}
	f.ss.mu.Unlock()
}

// cancelRequest handles notifications/cancelled: the request's context is
// cancelled and its response suppressed (a subscription is ended with its
// final answer instead).
func (ss *Session) cancelRequest(key, reason string) {
	ss.mu.Lock()
	f := ss.reqs[key]
	ss.mu.Unlock()
	if f == nil {
		ss.log.Debug("mcp: cancellation for an unknown or finished request", "requestId", key[1:])
		return
	}
	if !f.keepAlive {
		f.done.Store(true) // no response is sent for a cancelled request
	}
	ss.log.Info("mcp: request cancelled by the client", "requestId", key[1:], "reason", reason)
	f.cancel()
}

// cancelAll cancels every in-flight request (the session is closing).
func (ss *Session) cancelAll() {
	ss.mu.Lock()
	for _, f := range ss.reqs {
		f.cancel()
	}
	ss.mu.Unlock()
}
