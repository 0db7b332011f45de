package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/transport"
)

// withProgress returns ctx carrying the Progress of a request other than
// tools/call (whose ToolCall holds its own): ReportProgress works in the
// handler, and the request finishes it before it answers. A handler run
// again (in input rounds) reports on the same Progress.
func (req *Request) withProgress(ctx context.Context) context.Context {
	if req.f.prog != nil {
		return context.WithValue(ctx, progressKey{}, req.f.prog)
	}
	ctx, req.f.prog = req.Session.withProgress(ctx, jsontext.Value(req.Params), req.ProtocolVersion())
	return ctx
}

// answer sends the outcome of a request: a result (shaped for the
// request's revision), an *Error as it is, an input-required answer
// (proto_input.go), a panic as -32603 (as an INTERNAL tool error for
// tools/call), anything else as the feature error it maps to.
func (r *responder) answer(res any, err error) {
	if err == nil {
		r.result(res)
		return
	}
	r.answerError(err)
}

// answerError answers with a handler's error (apart from answer, so that
// the variables errors.As needs are not allocated for every result).
func (r *responder) answerError(err error) {
	if e, ok := err.(*Error); ok { // the common case, without the variables errors.As needs
		r.error(e)
		return
	}
	var ir *InputRequiredError
	var e *Error
	var p *errPanic
	switch {
	case errors.As(err, &ir):
		r.engine().inputRequired(r, ir)
	case errors.As(err, &e):
		r.error(e)
	case errors.As(err, &p) && r.call != nil:
		r.answer(r.toolResponse(r.call, nil, err))
	case errors.As(err, &p):
		r.error(&Error{Code: CodeInternalError, Message: "Internal error: the handler panicked"})
	default:
		r.error(r.ss.featureError(err))
	}
}

// answerChecked is the innermost handler of the middleware chain
// (Server.handle), below every Middleware: the method's own (dispatch),
// then the check of its result. A request's result is encoded here by
// its engine (the 2026-07-28 stamp, and its rule that a result is a JSON
// object), into the very response that will be written, and checked
// against the transport's MaxMessageBytes: a result that cannot be sent
// is refused here, with the -32603 error the client will get, so that the
// middleware sees what is answered. With no Middleware, nothing can
// change the result after this: the encoding is kept on the request and
// written as it is (answer). With Middleware, the result the chain
// returns (the same value, possibly changed in place, or another) is
// encoded again when the request answers.
func answerChecked(ctx context.Context, req *Request) (any, error) {
	res, err := dispatch(ctx, req)
	if err != nil || req.ID == nil {
		return res, err
	}
	return req.checkResult(res)
}

// encodedResult is a request's response as answerChecked encoded it,
// kept when the server has no Middleware: the whole message in buf (from
// bufPool when pooled; a batch part is the batch's to keep). Written and
// read on the goroutine that runs the request's chain and then answers.
type encodedResult struct {
	pooled bool
	buf    *[]byte
}

// checkResult encodes res as req's response (see answerChecked) and
// returns it, or the refusal the client gets instead, logged.
func (req *Request) checkResult(res any) (any, error) {
	bp, pooled, e := req.r.encodeResponse(res)
	if e != nil {
		return nil, e
	}
	if len(req.Session.server.opts.Middleware) != 0 {
		// A middleware may change the result in place before it returns
		// it (a redaction): what it returns is encoded again when the
		// request answers.
		if pooled {
			putBuffer(bp)
		}
		return res, nil
	}
	req.enc.keep(bp, pooled)
	return res, nil
}

// encodeResponse is the one place a request's result becomes its
// response: encoded by the request's engine (encode) into the whole
// message, in a buffer of bufPool (pooled), or a part of its own in a
// batch (whose whole answer is checked against the transport's limit
// when it is written), and checked. It returns the -32603 error answered
// instead of a result that cannot be sent, logged.
func (r *responder) encodeResponse(v any) (bp *[]byte, pooled bool, e *Error) {
	w, err := r.engine().encode(r, v)
	if err != nil {
		return nil, false, r.encodeRefusal(err)
	}
	if r.batch != nil {
		part, err := jsonrpc.AppendResponse(nil, r.id, w)
		if err != nil {
			return nil, false, r.encodeRefusal(err)
		}
		return &part, false, nil
	}
	bp = bufPool.Get().(*[]byte)
	msg, err := jsonrpc.AppendResponse((*bp)[:0], r.id, w)
	if err == nil && r.ss.conn.maxOut > 0 && len(msg) > r.ss.conn.maxOut {
		err = &transport.MessageTooLargeError{Limit: r.ss.conn.maxOut, Size: len(msg)}
	}
	*bp = msg
	if err != nil {
		putBuffer(bp)
		return nil, false, r.encodeRefusal(err)
	}
	return bp, true, nil
}

// keep keeps *bp, the response encoded, in place of what was kept
// before.
func (e *encodedResult) keep(bp *[]byte, pooled bool) {
	e.release()
	e.buf, e.pooled = bp, pooled
}

// release lets the kept encoding go.
func (e *encodedResult) release() {
	if e.pooled {
		putBuffer(e.buf)
	}
	e.buf, e.pooled = nil, false
}

// encodeRefusal logs why a result cannot be sent (err: from the engine's
// encode, the codec, or the transport's limit) and returns the -32603
// error answered instead.
func (r *responder) encodeRefusal(err error) *Error {
	var notObj *resultNotObjectError
	if errors.As(err, &notObj) {
		r.ss.log.Error("mcp: result refused", "error", err)
		return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
	}
	if tl := tooLarge(err); tl != nil {
		r.ss.log.Warn("mcp: response over MaxMessageBytes; an error is sent instead", "bytes", tl.Size, "maxBytes", tl.Limit)
		return r.overLimit(tl)
	}
	r.ss.log.Error("mcp: result not serializable", "error", err)
	return r.notSerializable()
}

// answer sends the outcome of req's handler chain: the response
// answerChecked kept (with no Middleware) when the chain returned that
// very result, otherwise (with Middleware, or an error) as
// responder.answer does, so that what a middleware returned, changed in
// place or replaced, is encoded and checked after it.
func (req *Request) answer(res any, err error) {
	e := &req.enc
	if e.buf != nil {
		if err == nil { // no Middleware: res is the result kept
			req.r.writeEncoded(*e.buf)
			e.release()
			return
		}
		e.release()
	}
	req.r.answer(res, err)
}

// writeEncoded sends msg, a response encoded by checkResult.
func (r *responder) writeEncoded(msg []byte) {
	if r.batch != nil {
		r.batch.add(r.id, msg)
		return
	}
	c := r.ss.conn
	if c.closed.Load() {
		return
	}
	if err := c.t.Write(r.ss.ctx, msg); err != nil && !isClosed(err) {
		r.ss.log.Warn("mcp: writing response failed", "error", err)
	}
}

// putBuffer returns a buffer of bufPool (nil: none), as conn.send does.
func putBuffer(bp *[]byte) {
	if bp != nil && cap(*bp) <= 64<<10 {
		*bp = (*bp)[:0]
		bufPool.Put(bp)
	}
}

// refuseGate answers request m of session ss with e, a refusal of the
// gate of its engine (state, _meta, revision, method), through the
// middleware chain (see Request.refusal); r is where the answer goes. It
// returns the job an engine's dispatch returns: the refusal's run through
// the chain, or nil when it was answered at once (no Middleware).
func refuseGate(ss *Session, m *jsonrpc.Message, r responder, e *Error) job {
	if len(ss.server.opts.Middleware) == 0 { // no one to see it: no request to build
		r.error(e)
		return nil
	}
	req := &Request{ID: json.RawMessage(m.ID), Method: m.Method, Params: json.RawMessage(m.Params), Session: ss, r: r}
	return req.refusal(ss.rd.messageContext(), e)
}

// refuseHandedOver answers request m of session ss with the refusal its
// transport handed it over with (r.x.Refusal: streamable HTTP's checks of
// a 2026-07-28 POST's headers, _meta and revision), as refuseGate answers
// the engines' own: through the middleware chain, in the scope of its
// era (modern: the request is marked as of revision 2026-07-28), the
// unmarked 2026-07-28 one on a per-request session, else the session's.
// The answer records its code in the hand-off, which gives it its HTTP
// status (handoff.Request.StatusOf: the refusal's own while it is
// answered as it is).
func refuseHandedOver(ss *Session, m *jsonrpc.Message, r responder, modern bool) job {
	f := r.x.Refusal
	if modern || ss.modernOnly {
		r.sc = unmarkedScope{ss}
	} else {
		r.sc = sessionScope{ss}
	}
	return refuseGate(ss, m, r, &Error{Code: f.Code, Message: f.Message, Data: f.Data})
}

// refusal answers req, a well-formed request refused before its method
// runs (by its engine's gate, or because its id is in use or MaxInFlight
// is reached), with e through the middleware chain, as every answer is.
// With no Middleware it answers at once and returns nil. Otherwise it
// returns the job that runs the chain with a handler that returns e in
// place of the method's (and nothing else of the method: not its input
// rounds) and answers with what the chain returns: a job the reader runs
// as it runs a request's, so that a middleware that blocks holds up the
// connection for InlineBudget at most. Refusals are bounded as requests
// are: while MaxInFlight of them are running through the chain, the next
// one runs here, on the reading goroutine, and nothing more is read until
// it returns (refusal returns nil). The request is not in its session's table of
// requests in flight (its id may be the one in use), but the drain at the
// end of the connection waits for it; its context (parent's, with the
// request) ends when the connection ends, if not before.
func (req *Request) refusal(parent context.Context, e *Error) job {
	ss := req.Session
	if len(ss.server.opts.Middleware) == 0 {
		req.r.error(e)
		return nil
	}
	req.handle = func(context.Context, *Request) (any, error) { return nil, e }
	req.rounds = inputRounds{}
	t := &ss.reqs
	t.wg.Add(1)
	t.active.Add(1)
	j := &refusalJob{req: req, parent: parent}
	if int(t.refusing.Add(1)) > ss.server.opts.MaxInFlight {
		j.run()
		return nil
	}
	return j
}

// refusalJob runs a refused request's middleware chain (Request.refusal).
type refusalJob struct {
	req    *Request
	parent context.Context
}

func (j *refusalJob) run() {
	req, ss := j.req, j.req.Session
	defer ss.reqs.refusing.Add(-1)
	defer ss.reqs.done() // after the functions AfterAnswer registered
	ctx := context.WithValue(j.parent, requestKey{}, req)
	if j.parent != ss.ctx { // a message's own context (HTTP): it ends with the connection too
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(ss.ctx, cancel)()
	}
	res, err := guard(ss.log, "middleware of a refused request", req.Method, func() (any, error) { return ss.server.handle(ctx, req) })
	// Under the guard too: a panic on the reading goroutine must not end
	// the process.
	_, _ = guard(ss.log, "answer of a refused request", req.Method, func() (any, error) { req.answer(res, err); return nil, nil })
	var sent any
	if err == nil {
		sent = res
	}
	req.answered(sent)
}

// afterAnswer holds the functions AfterAnswer registered for a request,
// and what it answered with. A request gets one when a function is
// registered or when it ends, whichever comes first (most requests never
// register one: they share ended).
type afterAnswer struct {
	mu   sync.Mutex
	fns  []func()
	ran  bool // the request ended: a function registered now runs at once
	sent any  // the result answered (nil: an error, or none)
}

// ended is the afterAnswer of the requests that ended with no function
// registered (never written: a function registered later runs at once).
var ended = &afterAnswer{ran: true}

// hooks returns the request's afterAnswer, made on first use.
func (r *Request) hooks() *afterAnswer {
	if a := r.after.Load(); a != nil {
		return a
	}
	r.after.CompareAndSwap(nil, &afterAnswer{})
	return r.after.Load()
}

// AfterAnswer registers f to run once the request has been answered (its
// response handed to the transport; for a request inside a 2025-03-26
// batch, its part of the batch's answer made, which is handed to the
// transport with the batch's last part, possibly after f ran), or has
// ended without an answer
// (cancelled by the client, whose cancellation suppresses it; a
// notification, once its handlers returned). Functions run in the order
// they were registered, each once, on the goroutine that answered the
// request, after the answer and before the request stops counting as in
// flight (what the end of Server.Run and Server.ServeRequest wait for).
// The request's context has usually ended by then: work that outlives
// the request derives from context.WithoutCancel. f registered after the
// request ended runs at once, on the caller's goroutine. A panic in f is
// logged and recovered. It is how a handler or middleware acts on what
// the client was told, and only then: start work the answer announced,
// notify about a change the answer reported.
func (r *Request) AfterAnswer(f func()) {
	a := r.hooks()
	a.mu.Lock()
	if !a.ran {
		a.fns = append(a.fns, f)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	r.runAfter(f)
}

// answered runs the functions AfterAnswer registered, once the request
// ended; sent is the result it was answered with (nil: none).
func (r *Request) answered(sent any) {
	a := r.after.Load()
	if a == nil && r.after.CompareAndSwap(nil, ended) {
		return // nothing registered: the result needs no remembering
	}
	if a = r.after.Load(); a == ended {
		return
	}
	a.mu.Lock()
	a.ran, a.sent = true, sent
	fns := a.fns
	a.fns = nil
	a.mu.Unlock()
	for _, f := range fns {
		r.runAfter(f)
	}
}

func (r *Request) runAfter(f func()) {
	_, _ = guard(r.Session.log, "AfterAnswer function", r.Method, func() (any, error) { f(); return nil, nil })
}

// sentResult returns the result the request was answered with (nil: an
// error, or none), for the functions AfterAnswer registered.
func (r *Request) sentResult() any {
	a := r.hooks()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent
}
