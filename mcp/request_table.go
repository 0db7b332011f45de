package mcp

import (
	"context"
	"fmt"
	"github.com/go-json-experiment/json/jsontext"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
)

// requestTable holds the requests one side of a connection is serving: a
// server Session's, or a Client's (the server's sampling, elicitation and
// roots requests). Each is owned by an inflight.
type requestTable struct {
	mu sync.Mutex
	// one holds the first request while it is the only one (most
	// per-request sessions never need the map), reqs the others, by idKey.
	one  *inflight
	reqs map[string]*inflight
	wg   sync.WaitGroup // one count per request being served
	// active counts them too, readable without waiting (drain)
	active atomic.Int32
	log    *slog.Logger
	// watched is the Done channel of the context whose end cancels every
	// request in the table (watch): a request whose parent ends with it
	// needs no registration of its own.
	watched <-chan struct{}
	// closed: every request, in flight or added later, is cancelled
	// (close).
	closed bool
	// counted is how many requests in the table count against the bound
	// add is given (every one but the lasting ones); guarded by mu.
	counted int
	// refusing counts the refusals running through the middleware chain
	// (Request.refusal), which are not in the table.
	refusing atomic.Int32
}

// close cancels every request in flight and every one added afterwards:
// the transport ended the request it handed over (handoff.Request.Abort;
// see Server.ServeRequest).
func (t *requestTable) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancelAll(false)
}

// End implements handoff.Ender: close (the transport ended the request it
// handed over).
func (t *requestTable) End() { t.close() }

// watch makes the end of ctx cancel every request in the table. The
// contexts of requests whose parent ends with ctx then follow it through
// the table (see requestValues) instead of each registering with ctx.
func (t *requestTable) watch(ctx context.Context) {
	t.watched = ctx.Done()
	context.AfterFunc(ctx, func() { t.cancelAll(false) })
}

// add registers f, or returns the error that refuses it: errIDInUse when
// its id is in use by another in-flight request, the MaxInFlight limit
// error when max requests (max > 0; lasting requests, keepAlive, are not
// counted) are in flight already.
func (t *requestTable) add(f *inflight, max int) *Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.lookup(f.key) != nil:
		return errIDInUse
	case max > 0 && !f.keepAlive && t.counted >= max:
		return limitError(CodeServerBusy, ErrResourceExhausted, true,
			"too many requests in flight on this connection", "MaxInFlight", max)
	case t.one == nil && len(t.reqs) == 0:
		t.one = f
	default:
		if t.reqs == nil {
			t.reqs = map[string]*inflight{}
		}
		t.reqs[f.key] = f
	}
	if !f.keepAlive {
		t.counted++
	}
	t.wg.Add(1)
	t.active.Add(1)
	if t.closed {
		f.abort() // its context ends at once (f is started: see begin)
	}
	return nil
}

// lookup returns the in-flight request of key, or nil; t.mu is held.
func (t *requestTable) lookup(key string) *inflight {
	if t.one != nil && t.one.key == key {
		return t.one
	}
	return t.reqs[key]
}

// cancel handles notifications/cancelled: the request's context is
// cancelled and its response suppressed (a subscription is ended with its
// final answer instead).
func (t *requestTable) cancel(key, reason string) {
	t.mu.Lock()
	f := t.lookup(key)
	t.mu.Unlock()
	if f == nil {
		t.log.Debug("mcp: cancellation for an unknown or finished request", logclip.Attr("requestId", key[1:]))
		return
	}
	if !f.keepAlive {
		f.done.close() // no response is sent for a cancelled request
	}
	t.log.Info("mcp: request cancelled by the peer", logclip.Attr("requestId", key[1:]), logclip.Attr("reason", reason))
	f.abort()
}

// cancelAll cancels every in-flight request (onlyKeepAlive: only the
// subscriptions, which would never end by themselves).
func (t *requestTable) cancelAll(onlyKeepAlive bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.one; f != nil && (f.keepAlive || !onlyKeepAlive) {
		f.abort()
	}
	for _, f := range t.reqs {
		if f.keepAlive || !onlyKeepAlive {
			f.abort()
		}
	}
}

// holdDetached counts a handler of ss that runs on after its request
// was answered (ToolCall.Detach) until the returned function is called: among
// the session's requests, whose drain waits for it, or, in the session of
// ServeRequest, which returns once its request is answered, among the
// Server's detached handlers (Server.StopTasks waits for them).
func holdDetached(ss *Session) (release func()) {
	if ss.rd.owned {
		n := &ss.server.detached
		n.add()
		return n.done
	}
	t := &ss.reqs
	t.wg.Add(1)
	t.active.Add(1)
	return t.done
}

// done counts a request served: it has been answered (or its answer
// suppressed) and its handler returned.
func (t *requestTable) done() {
	t.active.Add(-1)
	t.wg.Done()
}

// inflight is the one owner of a request's life: every request a Server
// serves, in both eras, and the requests a Client serves for its server.
// From begin to end it:
//
//   - holds the request in the session's table of in-flight requests, so
//     a duplicate id is refused and notifications/cancelled finds it;
//   - owns the request's context and cancels it when the request ends,
//     is cancelled, or the session closes;
//   - counts in the shutdown drain (requestTable.wg);
//   - recovers a panic of the handler chain (the server lives on);
//   - answers exactly once, with what the handler chain returns (a
//     deadline answers by returning through the chain: see
//     ToolCall.Detach), unless a cancellation suppressed the answer
//     first.
type inflight struct {
	tab    *requestTable
	req    *Request // nil when a Client serves the request (reply is set)
	key    string
	method string
	ctx    context.Context // the request's: a context.WithCancel of vals
	cancel context.CancelFunc
	vals   requestValues
	// done is closed once the request is answered or its answer
	// suppressed by a cancellation.
	done      answerGate
	prog      *Progress                // finished before the answer
	keepAlive bool                     // a cancellation ends the request with an answer (subscriptions/listen)
	reply     func(res any, err error) // answers a request a Client serves
}

// answerGate is the answer-once gate of a request, of a task's run
// (taskRun), and of the direct answer of a 2026-07-28 call that may
// become a task (modernRun): the first close wins the right to answer, or
// suppresses the answer.
type answerGate struct{ closed atomic.Bool }

// close closes the gate and reports whether this call closed it.
func (g *answerGate) close() bool { return g.closed.CompareAndSwap(false, true) }

// errPanic is what a handler "returned" when it panicked; send maps it to
// the method's internal error.
type errPanic struct{ value any }

func (e *errPanic) Error() string { return fmt.Sprint("panic: ", e.value) }

// guard runs fn and turns a panic in it into an *errPanic, logged with its
// stack as a panic of what (a request handler, a task handler, ...) named
// name. It is where package mcp recovers panics of user code: request,
// notification and task handlers, and the Client's handlers of its
// server's requests.
func guard(log *slog.Logger, what, name string, fn func() (any, error)) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("mcp: "+what+" panicked", logclip.Attr("name", name), "panic", logclip.Clip(fmt.Sprint(p), logclip.DefaultMaxValue), "stack", logclip.Clip(string(debug.Stack()), logclip.DefaultMaxValue))
			res, err = nil, &errPanic{value: p}
		}
	}()
	return fn()
}

// begin registers req as in flight, with a context derived from parent
// that carries req (RequestFromContext). On a duplicate id it answers
// -32600, and when ServerOptions.MaxInFlight requests of the connection
// are in flight already (a lasting one, keepAlive, is not counted) it
// refuses it with CodeServerBusy naming the bound (Request.refusal); it
// then returns false, with the refusal's job when Middleware sees it, and
// the connection goes on.
func (ss *Session) begin(req *Request, parent context.Context, keepAlive bool) (bool, job) {
	f := &req.f
	*f = inflight{tab: &ss.reqs, req: req, key: idKey(jsontext.Value(req.ID)), method: req.Method, keepAlive: keepAlive}
	f.vals.req = req
	f.start(parent, ss.reqs.watched)
	if e := ss.reqs.add(f, ss.server.opts.MaxInFlight); e != nil {
		f.cancel()
		return false, req.refusal(parent, e)
	}
	f.follow(ss.reqs.watched)
	return true, nil
}

// errIDInUse answers a request whose id an in-flight request has.
var errIDInUse = &Error{Code: CodeInvalidRequest, Message: "Invalid Request: id is already in use by an in-flight request"}

// beginReply registers request m in table tab, served on the Client's
// side: reply answers it. On a duplicate id it returns nil (the caller
// answers -32600).
func beginReply(tab *requestTable, m *jsonrpc.Message, parent context.Context, reply func(any, error)) *inflight {
	f := &inflight{tab: tab, key: idKey(m.ID), method: m.Method, reply: reply}
	f.start(parent, tab.watched)
	if tab.add(f, 0) != nil { // a Client's table has no bound
		f.cancel()
		return nil
	}
	f.follow(tab.watched)
	return f
}

// run runs fn on the calling goroutine, then ends the request: it answers
// with fn's outcome unless the request was cancelled meanwhile.
func (f *inflight) run(fn func(ctx context.Context) (any, error)) {
	defer f.tab.done()
	var res any
	var err error
	if f.ctx.Err() == nil || f.keepAlive {
		res, err = guard(f.tab.log, "request handler", f.method, func() (any, error) { return fn(f.ctx) })
	} else { // cancelled while it waited (in a batch): it does not run
		err = context.Cause(f.ctx)
	}
	f.end()
	var sent any // the result answered, if this run answered with one
	if f.done.close() {
		f.send(res, err)
		if err == nil {
			sent = res
		}
	} else {
		// Suppressed by a cancellation (which may have come at any point
		// before the gate closed): a batch expects no part for it.
		f.tab.log.Debug("mcp: response suppressed (request cancelled)", "method", f.method)
		if f.req != nil && f.req.r.batch != nil {
			f.req.r.batch.skip()
		}
	}
	if f.req != nil {
		f.req.answered(sent) // Request.AfterAnswer
	}
}

// send answers with the handler's outcome.
func (f *inflight) send(res any, err error) {
	if f.reply != nil {
		f.reply(res, err)
		return
	}
	if f.prog != nil {
		f.prog.finish() // no progress notification follows the response
	}
	f.req.answer(res, err)
}

// end cancels the request's context and removes it from the table.
func (f *inflight) end() {
	f.abort() // (a linked request's context leaves its parent's children)
	t := f.tab
	t.mu.Lock()
	removed := true
	switch {
	case t.one == f:
		t.one = nil
	case t.reqs[f.key] == f:
		delete(t.reqs, f.key)
	default:
		removed = false
	}
	if removed && !f.keepAlive {
		t.counted--
	}
	t.mu.Unlock()
}

// cancelRequest handles notifications/cancelled from the client.
func (ss *Session) cancelRequest(key, reason string) { ss.reqs.cancel(key, reason) }

// cancelAll cancels every in-flight request (the session is closing).
func (ss *Session) cancelAll() { ss.reqs.cancelAll(false) }
