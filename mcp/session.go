package mcp

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// sessionState is the lifecycle state of one connection. Every
// connection opens STARTING and ends CLOSED (terminal); a 2025 session
// goes through the handshake's states in between
// (rev2025_session_state.go).
type sessionState int32

const (
	stateStarting sessionState = 0
	stateClosed   sessionState = 3
)

// Session is the server side of one connection: its lifecycle state and
// its kind (ProtocolVersion), its transport and its correlation id.
// A Session is the connection only, the same pointer for every request it
// carries (SessionFromContext, Request.Session), whatever their revision:
// what applies to one request (its revision, client capabilities and info,
// log level) is the Request's to answer.
type Session struct {
	server *Server
	conn   *conn // &connOf
	connOf conn
	log    *slog.Logger
	ctx    context.Context
	// connCorrelationID is the connection's id (connID): generated at
	// once for a session, on first use for a per-request one.
	connCorrelationID string
	connIDOnce        sync.Once
	// connPeer is the peer a connection that is its own peer is
	// (transport.PeerOfConn of connID), computed with it, once.
	connPeer Peer
	// peer is the key of the peer the transport named for the session
	// (Server.Run); "" when it named none (peerKey).
	peer string
	// plog is the logger of a per-request session whose transport named
	// its peer (Server.ServeRequest).
	plog peerLog

	state atomic.Int32
	mu    sync.Mutex   // guards the fields below and s25's hs
	reqs  requestTable // requests in flight (request_table.go)
	// modernOnly: every request on this session is of revision 2026-07-28
	// (a session a stateless HTTP handler started for a modern POST).
	modernOnly bool
	// servedPerRequest is set once the connection has been handed a
	// request of revision 2026-07-28 (reader.route): ProtocolVersion then
	// tells it from a 2025 session not initialized yet.
	servedPerRequest atomic.Bool

	workers atomic.Pointer[workers] // see runWorker

	// s25 is what only a 2025 session keeps (session2025): allocated
	// with a session that can serve 2025 requests, and on first use
	// (state2025) by one that serves 2026-07-28 requests only, which
	// thus does not carry it per request.
	s25 atomic.Pointer[session2025]
	// rd reads the session's input (reader.go).
	rd reader
}

// session2025 is the state of a 2025 session: hs is what its initialize
// negotiated (rev2025_session_state.go; guarded by the Session's mu),
// feat its logging level and roots state, notes its pending change
// notifications and resource subscriptions (rev2025_session_features.go,
// rev2025_session_notes.go). Built with keel_omit2025 all three are
// empty structs.
type session2025 struct {
	hs    sessionHandshake
	feat  sessionFeatures
	notes sessionNotes
}

// state2025 returns the 2025 state of ss, allocated on first use. A
// reader that only wants to know what was recorded loads s25 instead,
// and takes nil for nothing.
func state2025(ss *Session) *session2025 {
	if p := ss.s25.Load(); p != nil {
		return p
	}
	if p := new(session2025); ss.s25.CompareAndSwap(nil, p) {
		return p
	}
	return ss.s25.Load()
}

func (s *Server) newSession(t transport.Transport, perRequest bool) *Session {
	ss := &Session{server: s, log: s.log, ctx: context.Background(), modernOnly: perRequest}
	if !perRequest { // a per-request session's id and logger attribute would rarely be used
		ss.s25.Store(new(session2025))
		ss.connCorrelationID = s.opts.NewID()
		ss.log = logclip.Scope(s.log, slog.String("connectionCorrelationId", ss.connCorrelationID))
	}
	ss.reqs.log = ss.log
	ss.rd.ss = ss
	ss.conn = &ss.connOf // one allocation with the session
	initConn(ss.conn, t, s.opts.MaxDepth, ss.log)
	ss.conn.ss, ss.conn.out = ss, sendChain(ss.conn, s.opts.SendMiddleware)
	return ss
}

// peerKeyOf is the key the session's per-peer budgets count under: the
// peer its transport named, else the connection itself.
func peerKeyOf(ss *Session) string {
	if ss.peer != "" {
		return ss.peer
	}
	return connPeerOf(ss).Key
}

// connID returns the connection's correlation id (a per-request session
// gets one on first use).
func (ss *Session) connID() string {
	ss.connIDOnce.Do(func() { initConnID(ss) })
	return ss.connCorrelationID
}

// connPeerOf returns the connection of ss as its own peer
// (transport.PeerOfConn), built once per connection rather than per
// request.
func connPeerOf(ss *Session) Peer {
	ss.connIDOnce.Do(func() { initConnID(ss) })
	return ss.connPeer
}

// initConnID sets the connection's id, if it has none yet, and the peer
// it names.
func initConnID(ss *Session) {
	if ss.connCorrelationID == "" {
		ss.connCorrelationID = ss.server.opts.NewID()
	}
	ss.connPeer = transport.PeerOfConn(ss.connCorrelationID)
}

// runWorker runs job on one of the session's workers (created on first
// use: most sessions never need one).
func (ss *Session) runWorker(j job) {
	w := ss.workers.Load()
	if w == nil {
		ss.workers.CompareAndSwap(nil, newWorkers(64, ss.conn.doneChan()))
		w = ss.workers.Load()
	}
	w.run(j)
}

// ProtocolVersion returns the connection's kind, named by a revision: the
// revision initialize negotiated for a 2025 session; Version20260728 for
// a connection that has not been initialized but has been handed requests
// of that revision, which are served each from its own _meta (the
// revision has no initialize); "" for a connection that has had neither
// yet. It tells the connections of Server.Sessions apart; it is not the
// revision of a request, which is Request.ProtocolVersion (a 2025 session
// may carry 2026-07-28 requests too).
func (ss *Session) ProtocolVersion() string {
	if v := ss.negotiated(); v != "" {
		return v
	}
	if ss.modernOnly || ss.servedPerRequest.Load() {
		return Version20260728
	}
	return ""
}

// negotiated returns the revision initialize negotiated ("" before it).
func (ss *Session) negotiated() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if p := ss.s25.Load(); p != nil {
		return p.hs.revision()
	}
	return ""
}

// clientInfo returns the clientInfo the client sent in initialize (zero
// for a connection that was never initialized). It is the connection's
// record, for mcp's own use: what a handler asks is Request.ClientInfo,
// which answers for the request (a 2026-07-28 request names its own).
func (ss *Session) clientInfo() Implementation {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if p := ss.s25.Load(); p != nil {
		return p.hs.info()
	}
	return Implementation{}
}

// clientCapabilities returns the capabilities the client declared in
// initialize (zero for a connection that was never initialized): what a
// server-to-client request of a 2025 session may use. What a handler asks
// is Request.ClientCapabilities, which answers for the request (a
// 2026-07-28 request declares its own).
func (ss *Session) clientCapabilities() ClientCapabilities {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if p := ss.s25.Load(); p != nil {
		return p.hs.caps()
	}
	return ClientCapabilities{}
}

// ConnectionCorrelationID returns the id generated when the connection opened.
func (ss *Session) ConnectionCorrelationID() string { return ss.connID() }

// TransportKind returns the Kind of the session's transport ("stdio", "memory", "http").
func (ss *Session) TransportKind() string { return ss.conn.t.Kind() }

func (ss *Session) close() {
	ss.state.Store(int32(stateClosed))
	ss.conn.close()
	ss.cancelAll()
}

// responder answers one request, directly or as part of a batch.
type responder struct {
	ss    *Session
	id    jsontext.Value
	batch *batch
	call  *ToolCall // the tools/call answered, if any
	// sc is which revision's rules the request follows, and the engine
	// that serves it (engine.go): never nil.
	sc scope
	// params are the request's params (nil for a message that is not a
	// request): errors echo their _meta.correlationId.
	params jsontext.Value
	// wctx, if set, is the context an error is written with instead of
	// the session's: the message's own (reader.messageContext), so that a
	// transport routes an answer without an id (a refused batch) to the
	// exchange that carried the message.
	wctx context.Context
	// x is the transport's hand-off of the request (nil when it made
	// none): an error answer records its code there before it is written.
	x *handoff.Request
}

func (r *responder) result(v any) {
	bp, pooled, e := r.encodeResponse(v) // request_answer.go
	if e != nil {
		r.error(e)
		return
	}
	r.writeEncoded(*bp)
	if pooled {
		putBuffer(bp)
	}
}

// notSerializable is the -32603 answer to a result that cannot be encoded.
// Like every protocol error its data carries the correlation id: the call's
// correlationId and runId for tools/call, else the connection's.
func (r responder) notSerializable() *Error {
	e := &Error{Code: CodeInternalError, Message: "Internal error: result not serializable"}
	if r.call != nil {
		e.Data = &StructuredError{Code: ErrInternal, Message: "the result could not be encoded as JSON",
			CorrelationID: r.call.CorrelationID, RunID: r.call.RunID}
	}
	return e
}

// overLimit is the -32603 answer to a response the transport's
// MaxMessageBytes would not carry: the peer gets an error it can read,
// naming the limit, instead of a message it would discard unanswered.
// Like notSerializable, it carries the call's correlation ids.
func (r responder) overLimit(tl *transport.MessageTooLargeError) *Error {
	se := &StructuredError{Code: ErrResourceExhausted,
		Message:       "the response (" + strconv.Itoa(tl.Size) + " bytes) exceeds the transport's MaxMessageBytes (" + strconv.Itoa(tl.Limit) + " bytes)",
		Details:       map[string]any{"limit": "MaxMessageBytes", "maxBytes": tl.Limit},
		CorrelationID: r.ss.connID()}
	if r.call != nil {
		se.CorrelationID, se.RunID = r.call.CorrelationID, r.call.RunID
	}
	return &Error{Code: CodeInternalError, Message: "Internal error: response exceeds MaxMessageBytes (" + strconv.Itoa(tl.Limit) + " bytes)", Data: se}
}

// correlationID is the correlation id of the request r answers: the
// _meta.correlationId its params carry, else the connection's. It is read
// only on the way to an error.
func (r responder) correlationID() string {
	if id := revision.CorrelationID(r.params); id != "" {
		return id
	}
	return r.ss.connID()
}

// protoErrData is error.data of protocol errors that carry no other data.
type protoErrData struct {
	CorrelationID string `json:"correlationId"`
}

// correlated is error data with a correlationId member of its own:
// correlatedWith returns a copy carrying id(), or nil when the data has
// one already. responder.error fills it in for every protocol error.
type correlated interface {
	correlatedWith(id func() string) any
}

// error answers with e, its data carrying the request's correlation id
// (correlationID) whatever produced it: it is the one place every protocol
// error gets it. Data that is nil becomes {"correlationId": id}; a
// StructuredError (or a correlated type of keel's) without an id gets a
// copy with it; a map[string]any, or a raw JSON object, without a
// "correlationId" member gets a copy with the member added. Other data (a
// string, an array, a struct of the handler's) is sent as it is. The
// handler's value is never changed.
func (r responder) error(e *Error) {
	if c := r.engine().errorCode(e.Code); c != e.Code {
		ce := *e
		ce.Code = c
		e = &ce
	}
	if d, ok := correlateData(e.Data, r.correlationID, r.ss.connID); ok {
		e = &Error{Code: e.Code, Message: e.Message, Data: d}
	}
	id := r.id
	if id == nil {
		id = jsonrpc.Null
	}
	if r.batch != nil {
		r.batch.addError(&r, id, e)
		return
	}
	ctx := r.ss.ctx
	if r.wctx != nil {
		ctx = r.wctx
	}
	if r.x != nil {
		r.x.SetErrorCode(e.Code) // the HTTP status of a 2026-07-28 answer
	}
	err := r.ss.conn.writeError(ctx, id, e)
	if tooLarge(err) != nil {
		// An error that echoes a large value: sent without its data but
		// the correlation id it carried, its message clipped.
		err = r.ss.conn.writeError(ctx, id, &Error{Code: e.Code, Message: logclip.Clip(e.Message, logclip.DefaultMaxValue),
			Data: protoErrData{CorrelationID: dataCorrelationID(e.Data, r.correlationID)}})
	}
	if err != nil && !isClosed(err) {
		r.ss.log.Warn("mcp: writing error response failed", "error", err)
	}
}

// notificationHandler returns the handler of notification name, or nil.
func (s *Server) notificationHandler(name string) MethodHandler {
	switch name {
	case notificationInitialized:
		return handleInitialized
	case notificationCancelled:
		return handleCancelled
	case notificationRootsListChanged:
		return handleRootsListChanged
	}
	return s.opts.Notifications[name]
}

func handleCancelled(_ context.Context, req *Request) (any, error) {
	var p cancelledParams
	if req.Params == nil || jsonv2.Unmarshal(req.Params, &p) != nil || p.RequestID == nil {
		req.Session.log.Warn("mcp: malformed notifications/cancelled ignored")
		return nil, nil
	}
	req.Session.cancelRequest(idKey(jsontext.Value(p.RequestID)), p.Reason)
	return nil, nil
}

// cancelledParams are the params of notifications/cancelled.
type cancelledParams struct {
	RequestID jsontext.Value `json:"requestId"`
	Reason    string         `json:"reason,omitempty"`
	Meta      Meta           `json:"_meta,omitempty"`
}

// declareCustom merges ServerOptions.Capabilities into caps: Experimental
// always, Extensions when extensions is set (2026-07-28). keel's own
// entries win.
func (s *Server) declareCustom(caps *ServerCapabilities, extensions bool) {
	c := s.opts.Capabilities
	if c == nil {
		return
	}
	caps.Experimental = mergeCapabilityMaps(caps.Experimental, c.Experimental)
	if extensions {
		caps.Extensions = mergeCapabilityMaps(caps.Extensions, c.Extensions)
	}
}

func mergeCapabilityMaps(own, extra map[string]any) map[string]any {
	if len(extra) == 0 {
		return own
	}
	out := make(map[string]any, len(own)+len(extra))
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range own {
		out[k] = v
	}
	return out
}

// idKey is the in-flight map key of a request id: strings and numbers never
// collide.
func idKey(id jsontext.Value) string {
	if id.Kind() == '"' {
		var s string
		if jsonv2.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(id)
}

func quote(s string) string {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		return `"?"`
	}
	return string(b)
}
