package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// requestTable holds the requests one side of a connection is serving: a
// server Session's, or a Client's (the server's sampling, elicitation and
// roots requests). Each is owned by an inflight.
type requestTable struct {
	mu   sync.Mutex
	reqs map[string]*inflight // by idKey
	wg   sync.WaitGroup       // one count per request being served
	log  *slog.Logger
}

// add registers f; false when its id is in use by another in-flight request.
func (t *requestTable) add(f *inflight) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.reqs[f.key]; dup {
		return false
	}
	if t.reqs == nil {
		t.reqs = map[string]*inflight{}
	}
	t.reqs[f.key] = f
	t.wg.Add(1)
	return true
}

// cancel handles notifications/cancelled: the request's context is
// cancelled and its response suppressed (a subscription is ended with its
// final answer instead).
func (t *requestTable) cancel(key, reason string) {
	t.mu.Lock()
	f := t.reqs[key]
	t.mu.Unlock()
	if f == nil {
		t.log.Debug("mcp: cancellation for an unknown or finished request", "requestId", key[1:])
		return
	}
	if !f.keepAlive {
		f.done.Store(true) // no response is sent for a cancelled request
	}
	t.log.Info("mcp: request cancelled by the peer", "requestId", key[1:], "reason", reason)
	f.cancel()
}

// cancelAll cancels every in-flight request (onlyKeepAlive: only the
// subscriptions, which would never end by themselves).
func (t *requestTable) cancelAll(onlyKeepAlive bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.reqs {
		if f.keepAlive || !onlyKeepAlive {
			f.cancel()
		}
	}
}

// inflight is the one owner of a request's life, used by every method that
// runs user code (tools/call, resources/read, prompts/get,
// completion/complete, tasks/result, subscriptions/listen), in both eras,
// and by the Client for the requests its server sends it.
// From begin to end it:
//
//   - holds the request in the session's table of in-flight requests, so
//     a duplicate id is refused and notifications/cancelled finds it;
//   - owns the request's context and cancels it when the request ends,
//     is cancelled, or the session closes;
//   - counts in the shutdown drain (requestTable.wg);
//   - recovers a panic of the handler (the server lives on);
//   - answers exactly once: the first of the handler's return, an early
//     answer (ToolCall.RespondEarly, e.g. middleware.Timeout's response
//     deadline) or a cancellation (which suppresses the answer) wins, and
//     whatever comes later is logged and dropped.
type inflight struct {
	tab    *requestTable
	ss     *Session // nil when a Client serves the request (reply is set)
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
	early     *atomic.Bool             // nil, or the ToolCall's earlyResponse
	call      *ToolCall                // a tools/call: answered by sendToolResponse
	prog      *Progress                // finished before the answer (requests other than tools/call)
	keepAlive bool                     // a cancellation ends the request with an answer (subscriptions/listen)
	in        *Input                   // a tools/call's input from its params (2026-07-28)
	reply     func(res any, err error) // answers a request a Client serves
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
		*f = inflight{tab: &ss.reqs, ss: ss, r: r, key: idKey(m.ID), method: m.Method, call: call, done: &call.responded, early: &call.earlyResponse}
	} else {
		f = &inflight{tab: &ss.reqs, ss: ss, r: r, key: idKey(m.ID), method: m.Method}
		f.done = &f.ownDone
	}
	f.ctx, f.cancel = context.WithCancel(parent)
	if !ss.reqs.add(f) {
		f.cancel()
		r.error(errIDInUse)
		return nil
	}
	return f
}

// errIDInUse answers a request whose id an in-flight request has.
var errIDInUse = &Error{Code: CodeInvalidRequest, Message: "Invalid Request: id is already in use by an in-flight request"}

// beginReply registers request m in table tab, served on the Client's
// side: reply answers it. On a duplicate id it returns nil (the caller
// answers -32600).
func beginReply(tab *requestTable, m *jsonrpc.Message, parent context.Context, reply func(any, error)) *inflight {
	f := &inflight{tab: tab, key: idKey(m.ID), method: m.Method, reply: reply}
	f.done = &f.ownDone
	f.ctx, f.cancel = context.WithCancel(parent)
	if !tab.add(f) {
		f.cancel()
		return nil
	}
	return f
}

// run runs fn on the calling goroutine, then ends the request: it answers
// with fn's outcome unless the request was answered or cancelled already.
func (f *inflight) run(fn func(ctx context.Context) (any, error)) {
	defer f.tab.wg.Done()
	var res any
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				f.tab.log.Error("mcp: request handler panicked", "method", f.method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
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
		f.tab.log.Debug("mcp: response suppressed (request cancelled)", "method", f.method)
		if f.r.batch != nil {
			f.r.batch.skip()
		}
	default:
		f.tab.log.Warn("mcp: late result dropped (already answered)", "method", f.method, "outcome", "late_completed")
	}
}

// send answers with the handler's outcome.
func (f *inflight) send(res any, err error) {
	if f.reply != nil {
		f.reply(res, err)
		return
	}
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
	t := f.tab
	t.mu.Lock()
	if t.reqs[f.key] == f {
		delete(t.reqs, f.key)
	}
	t.mu.Unlock()
}

// cancelRequest handles notifications/cancelled from the client.
func (ss *Session) cancelRequest(key, reason string) { ss.reqs.cancel(key, reason) }

// cancelAll cancels every in-flight request (the session is closing).
func (ss *Session) cancelAll() { ss.reqs.cancelAll(false) }
