package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// reader is a session's input side: it reads messages, hands each
// request to its era's engine (handleRequest), and runs quick tools/calls
// inline on its goroutine, handing reading over to a new goroutine when
// one runs too long (runInline). Exactly one goroutine reads at a time.
type reader struct {
	ss *Session
	// inputDone is closed, with inputErr set, when the input ends.
	parent    context.Context
	inputDone chan struct{}
	inputErr  error
	// inlineTok identifies the tools/call the reader is running inline
	// (0: none), and takeover fires when it runs too long.
	inlineSeq atomic.Uint64
	inlineTok atomic.Uint64
	takeover  *time.Timer
	// msgCtx is the context the transport attached to the message being
	// handled, or nil; reader-owned (server_http.go).
	msgCtx context.Context
	// x is the transport's hand-off of the message being handled, or nil;
	// reader-owned (noteMessage).
	x *handoff.Request
	// owned: the messages handled are the caller's to give (ServeRequest),
	// so what the request keeps of them is not copied.
	owned bool
}

// readLoop reads and handles messages until the input ends, or until this
// goroutine, while running a tools/call inline, has handed reading over to
// another goroutine. Exactly one goroutine reads at a time.
func (rd *reader) readLoop() {
	ss := rd.ss
	for {
		msg, err := ss.conn.t.Read(ss.ctx)
		if err != nil {
			var tooLarge *transport.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				responder{ss: ss, sc: sessionScope{ss}}.error(&Error{Code: CodeInvalidRequest,
					Message: "Invalid Request: " + tooLarge.Error(),
					Data:    map[string]any{"limit": "MaxMessageBytes", "maxBytes": tooLarge.Limit, "correlationId": ss.connID()}})
				continue
			}
			if rd.parent.Err() != nil {
				rd.inputErr = rd.parent.Err()
			} else if !isEOF(err) {
				rd.inputErr = err
			}
			close(rd.inputDone)
			return
		}
		rd.noteMessage(msg) // values the transport attached to msg (server_http.go)
		if j := rd.handleRead(msg); j != nil && !rd.runInline(j) {
			return
		}
	}
}

// runInline runs a tools/call on the reading goroutine, which saves the
// hand-off to another goroutine (and the thread wake-ups it costs) for the
// many calls that finish quickly. If the call is still running after
// InlineBudget, a new goroutine takes over reading, so a slow call never
// holds up the connection for longer than that. runInline reports whether
// this goroutine is still the reader.
func (rd *reader) runInline(j job) bool {
	ss := rd.ss
	budget := ss.server.opts.InlineBudget
	switch {
	case budget < 0:
		ss.runWorker(j)
		return true
	case rd.takeover == nil:
		// A per-request session (stateless HTTP, 2026-07-28) carries one
		// request: nothing else will be read while it runs.
		j.run()
		return true
	}
	tok := rd.inlineSeq.Add(1)
	rd.inlineTok.Store(tok)
	rd.takeover.Reset(budget)
	j.run()
	if !rd.inlineTok.CompareAndSwap(tok, 0) {
		return false // another goroutine reads now; it owns the timer
	}
	rd.takeover.Stop()
	return true
}

// takeOverReading runs when an inline call exceeds its budget: unless the
// call has just finished, a new goroutine becomes the reader.
func (rd *reader) takeOverReading() {
	if tok := rd.inlineTok.Load(); tok != 0 && rd.inlineTok.CompareAndSwap(tok, 0) {
		go rd.readLoop()
	}
}

// handleRaw handles one framed message. It returns the job of a tools/call
// for the reading goroutine to run (see runInline), or nil.
func (rd *reader) handleRaw(msg []byte) job {
	ss := rd.ss
	if jsonrpc.IsBatch(msg) {
		return rd.handleBatch(msg)
	}
	decode := jsonrpc.Decode
	if rd.owned {
		decode = jsonrpc.DecodeOwned
	}
	m, derr := decode(msg, ss.server.opts.MaxDepth)
	if derr != nil {
		// With the message's context: an answer with id null goes to the
		// exchange that carried the message (see responder.wctx).
		responder{ss: ss, sc: sessionScope{ss}, id: derr.ID, wctx: rd.messageContext(), x: rd.x}.error(&Error{Code: derr.Code, Message: derr.Message})
		return nil
	}
	return rd.handleMessage(&m, nil)
}

// handleRead handles msg, the message just read (or handed to
// ServeRequest): as the transport read it when it handed it over (see
// noteMessage), else read here.
func (rd *reader) handleRead(msg []byte) job {
	ss := rd.ss
	if x := rd.x; x != nil && int(x.MaxDepth) <= ss.server.opts.MaxDepth {
		m := &x.Msg
		if m.Kind != jsonrpc.KindRequest {
			return rd.handleMessage(m, nil)
		}
		var meta requestMeta
		var e *Error
		if x.Reading.Marked {
			meta, e = requestMetaOf(m.Params, &x.Reading, &ss.server.clientInfos)
		}
		return rd.route(m, responder{ss: ss, id: m.ID, params: m.Params, x: x}, x.Reading.Marked, meta, e)
	}
	return rd.handleRaw(msg)
}

func (rd *reader) handleMessage(m *jsonrpc.Message, b *batch) job {
	ss := rd.ss
	switch m.Kind {
	case jsonrpc.KindResponse:
		if m.ID != nil {
			ss.conn.deliver(m)
		}
	case jsonrpc.KindNotification:
		rd.handleNotification(m)
	case jsonrpc.KindRequest:
		return rd.handleRequest(m, responder{ss: ss, id: m.ID, batch: b, params: m.Params, x: rd.x})
	}
	return nil
}

// handleNotification serves a notification through the middleware chain,
// on the reading goroutine: the built-in ones (initialized, cancelled,
// roots/list_changed) and the server's custom ones
// (ServerOptions.Notifications); others are ignored. Like a request, it is
// handed to its revision's engine, which decides whether it is served and
// in which scope (Request.ProtocolVersion and the peer accessors answer
// for it as for a request).
func (rd *reader) handleNotification(m *jsonrpc.Message) {
	ss := rd.ss
	h := ss.server.notificationHandler(m.Method)
	if h == nil {
		ss.log.Debug("mcp: notification ignored", logclip.Attr("method", m.Method))
		return
	}
	eng := connectionEngine
	if ss.modernOnly || revision.Marked(m.Params) {
		eng = modernEngine{}
	}
	r, ok := eng.notification(ss, m)
	if !ok {
		return
	}
	req := &Request{Method: m.Method, Params: json.RawMessage(m.Params), Session: ss, r: r, handle: h}
	ctx := context.WithValue(rd.messageContext(), requestKey{}, req)
	func() {
		_, err := guard(ss.log, "notification handler", m.Method, func() (any, error) { return ss.server.handle(ctx, req) })
		var p *errPanic
		if err != nil && !errors.As(err, &p) {
			ss.log.Warn("mcp: notification handler failed", logclip.Attr("method", m.Method), "error", err)
		}
	}()
	req.answered(nil) // Request.AfterAnswer: a notification ends unanswered
}

// handleRequest hands request m to its era's engine.
func (rd *reader) handleRequest(m *jsonrpc.Message, r responder) job {
	modern, meta, e := classifyRequest(m.Params, &rd.ss.server.clientInfos)
	return rd.route(m, r, modern, meta, e)
}

// route hands request m to its era's engine, given classifyRequest's
// reading of its params: a modern request, or any request of a
// per-request session, to the modern rules (which refuse a request
// without the modern _meta), any other to the legacy ones. A request the
// transport handed over with its refusal is answered with it.
func (rd *reader) route(m *jsonrpc.Message, r responder, modern bool, meta requestMeta, e *Error) job {
	ss := rd.ss
	switch {
	case r.x != nil && r.x.Refusal != nil: // refused by the transport (request_answer.go)
		return refuseHandedOver(ss, m, r, modern)
	case modern:
		r.sc = unmarkedScope{ss}
		return modernEngine{}.dispatchMeta(ss, m, r, meta, e)
	case ss.modernOnly:
		r.sc = unmarkedScope{ss}
		return modernEngine{}.dispatch(ss, m, r)
	}
	r.sc = sessionScope{ss}
	return connectionEngine.dispatch(ss, m, r)
}

// noteMessage records what the transport handed over with msg, the
// message just read: the context it attached (HTTP: the request's values
// and stream) and the message's hand-off (HTTP: the message as read, and
// where its answer's error code goes), each nil when there is none; the
// reading goroutine calls it after each Read. The hand-off is found
// through wrappers (handoff.CarrierOf) and used only for the very bytes
// it was made for (handoff.Of).
func (rd *reader) noteMessage(msg []byte) {
	ss := rd.ss
	rd.msgCtx = nil
	if mc, ok := ss.conn.t.(transport.MessageContexter); ok {
		rd.msgCtx = mc.MessageContext(ss.ctx)
	}
	rd.x = handoff.Of(handoff.CarrierOf(ss.conn.t), msg)
}

// messageContext is the parent context of a request being handled: the
// session's context, overlaid with what the transport attached to the
// request's message. Only the reading goroutine may call it, while it
// handles the message.
func (rd *reader) messageContext() context.Context {
	ss := rd.ss
	if rd.msgCtx != nil {
		return rd.msgCtx
	}
	return ss.ctx
}
