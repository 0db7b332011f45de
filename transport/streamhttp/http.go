package streamhttp

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/transport"
)

// Header names of the streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerLastEventID     = "Last-Event-Id"
)

// Handler serves MCP over the streamable HTTP transport on one
// endpoint: POST carries client messages, GET opens the stream of
// server-initiated messages, DELETE ends a session. Mount it on the
// endpoint path of your own net/http server. Create it with
// NewHandler (or NewServerHandler).
//
// Status rules: 403 for a Host or Origin not allowed; 405 for other
// methods; 415 for a POST whose Content-Type is not application/json; 406
// when Accept lacks application/json and text/event-stream (POST) or
// text/event-stream (GET); 413 for a body over MaxBodyBytes; 408 for a
// body not received within BodyReadTimeout; 400 for a malformed JSON-RPC
// body (with the JSON-RPC error as body), a missing Mcp-Session-Id, an
// unsupported MCP-Protocol-Version or a batch outside 2025-03-26; 404 for
// an unknown or ended session (or one bound to another user); 202 with no
// body for POSTs carrying only notifications and responses; 503 while
// shutting down, and at MaxSessions or MaxStreams; 429 at
// MaxSessionGETStreams, MaxSessionsPerPeer and MaxStreamsPerPeer (the
// peer is the verified token's subject or client id, else the remote
// address read through TrustedProxies). The error bodies of limits carry data
// {"limit": the Options field, "max": its value}. Every error body the
// handler writes itself carries data.correlationId: the request's
// _meta.correlationId when the body was parsed and its message carries
// one, else the correlation id of the session the request names (an
// mcp.Server's connection id, which its own errors carry), else a fresh
// id; a refusal the handler logs names the same id.
//
// Each message the server sends goes on exactly one stream: a response on
// the POST that carried its request; a message written with the context
// of a request (see transport.MessageContexter) on that request's stream while it is
// open; anything else on the GET stream (notifications are dropped when
// none is open; requests fail with ErrNoStream).
//
// Two eras on one endpoint: a POST is modern (revision 2026-07-28, which
// has no sessions) when its params._meta carries
// "io.modelcontextprotocol/protocolVersion" or its MCP-Protocol-Version
// header names 2026-07-28 or later; otherwise it is served as above. In
// stateful and stateless mode alike, a modern request is served by a fresh
// session that ends with the POST (Serve finds a StatelessRequest with the
// revision in its context); no Mcp-Session-Id is issued, and one sent is
// ignored. Before Serve sees it, the handler refuses with 400 and a
// JSON-RPC error echoing the request id when _meta lacks protocolVersion or
// clientCapabilities (-32602), when MCP-Protocol-Version is missing or
// differs from _meta (-32020), when the revision is not in
// SupportedVersions (-32022, data {supported, requested}), and when the
// Mcp-Method header differs from the method or Mcp-Name from the name
// (params.name of tools/call and prompts/get, params.uri of
// resources/read, params.taskId of tasks/get, tasks/update and
// tasks/cancel; values may be encoded as =?base64?...?=). Behind
// NewServerHandler, when the Server has Middleware, the Server answers
// these refusals through it (the request is handed to it with its
// refusal), with the same status and body unless a Middleware replaces
// them; the error's data.correlationId is then the request's
// _meta.correlationId, else a fresh id of the Server's NewID. A modern error
// answered as JSON gets 404 for -32601 and 400 for -32020, -32021 and
// -32022; a batch gets 400; notifications get 202. A subscriptions/listen
// request keeps its SSE stream open until the server answers it or the
// client goes away (which cancels it). GET and DELETE with a modern
// MCP-Protocol-Version get 405.
type Handler struct {
	opts     Options
	log      *slog.Logger
	versions map[string]bool
	hosts    []string
	anyHost  bool
	origins  originList

	mu        sync.Mutex
	stateless map[*httpSession]struct{} // sessions of the POSTs in progress that each serve one (guarded by mu)
	// rev2025 is what only the 2025 rules need: the sessions by
	// Mcp-Session-Id and per peer, the event store (guarded by mu). It is
	// empty in a build without those rules (keel_omit2025).
	rev2025 handlerRev2025

	proxies     proxyList  // TrustedProxies
	proxyHeader string     // TrustedProxyHeader, canonical
	peerStreams peerCounts // HTTP requests being served per peer (MaxStreamsPerPeer)

	inflight atomic.Int64 // unanswered requests, all sessions
	streams  atomic.Int64 // HTTP requests being served (MaxStreams)
	refusals *refusalLog
	closing  atomic.Bool
	serveWG  sync.WaitGroup
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a handler configured by opts; opts.Serve is
// required (NewHandler panics without it).
func NewHandler(opts *Options) *Handler {
	if opts == nil || opts.Serve == nil {
		panic("transport: NewHandler needs Options.Serve")
	}
	o := *opts
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.MaxStreamsPerPeer == 0 {
		o.MaxStreamsPerPeer = DefaultMaxStreamsPerPeer
	}
	if o.BodyReadTimeout == 0 {
		o.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if o.RefusalLogsPerSecond == 0 {
		o.RefusalLogsPerSecond = DefaultRefusalLogsPerSecond
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = transport.DefaultMaxMessageBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = jsonrpc.DefaultMaxDepth
	}
	if o.SupportedVersions == nil {
		o.SupportedVersions = defaultVersions
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	h := &Handler{opts: o, log: slog.New(logclip.NewHandler(o.Logger.Handler(), 0, 0)),
		stateless: map[*httpSession]struct{}{}, versions: map[string]bool{}}
	for _, v := range o.SupportedVersions {
		h.versions[v] = true
	}
	h.rev2025.init(&h.opts)
	proxies, err := parseProxies("Options.TrustedProxies", o.TrustedProxies)
	if err != nil {
		panic(err.Error())
	}
	h.proxies, h.proxyHeader = proxies, proxyHeader(o.TrustedProxyHeader)
	h.refusals = newRefusalLog(o.Logger, slog.LevelWarn, o.RefusalLogsPerSecond)
	h.hosts, h.anyHost = normalizeList(o.AllowedHosts, defaultLocalHosts)
	h.origins = newOriginList(o.AllowedOrigins)
	return h
}

func normalizeList(list, def []string) ([]string, bool) {
	if list == nil {
		list = def
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		if e == "*" {
			return nil, true
		}
		out = append(out, strings.ToLower(strings.Trim(e, "[]")))
	}
	return out, false
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hostAllowed(r.Host) {
		cid := writeHTTPError(w, h.exchangeOf(r), http.StatusForbidden, codeServerError, "Forbidden: Host not allowed")
		h.refusals.print("transport: request with a Host not allowed refused (DNS rebinding protection)", clipped("host", r.Host), correlationAttr(cid))
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.origins.allows(o) {
		cid := writeHTTPError(w, h.exchangeOf(r), http.StatusForbidden, codeServerError, "Forbidden: Origin not allowed")
		h.refusals.print("transport: request with an Origin not allowed refused", clipped("origin", o), correlationAttr(cid))
		return
	}
	// Who the request comes from, for every per-peer bound here and in
	// the server (mcp.PeerFromContext): set once, on the request.
	r = r.WithContext(transport.WithPeer(r.Context(), h.peerOf(r)))
	if r.Method == http.MethodGet || r.Method == http.MethodDelete {
		if v, _ := headerField(r, headerProtocolVersion); isModernHeader(v) {
			// Revision 2026-07-28 has no GET stream and no sessions.
			w.Header().Set("Allow", "POST")
			writeHTTPError(w, h.exchangeOf(r), http.StatusMethodNotAllowed, codeServerError, "Method Not Allowed: protocol revision "+quoteHeader(v)+" has no GET stream and no sessions")
			return
		}
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r)
	case http.MethodGet:
		if h.opts.Stateless {
			h.methodNotAllowed(w, r)
			return
		}
		h.serveGET(w, r)
	case http.MethodDelete:
		if h.opts.Stateless {
			h.methodNotAllowed(w, r)
			return
		}
		h.serveDELETE(w, r)
	default:
		h.methodNotAllowed(w, r)
	}
}

func (h *Handler) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if h.opts.Stateless {
		w.Header().Set("Allow", "POST")
	} else {
		w.Header().Set("Allow", "GET, POST, DELETE")
	}
	writeHTTPError(w, h.exchangeOf(r), http.StatusMethodNotAllowed, codeServerError, "Method Not Allowed")
}

func (h *Handler) hostAllowed(host string) bool {
	if h.anyHost {
		return true
	}
	host = strings.ToLower(host)
	name := host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		name = hn
	}
	name = strings.Trim(name, "[]")
	for _, a := range h.hosts {
		if a == name || a == host {
			return true
		}
	}
	return false
}

// accepts reports whether the Accept header admits every one of
// mediaTypes (at most 8, each "type/subtype" in lower case), read in one
// pass.
func accepts(r *http.Request, mediaTypes ...string) bool {
	all := uint8(1)<<len(mediaTypes) - 1
	var seen uint8 // bit i: mediaTypes[i] is admitted
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			mt = strings.ToLower(strings.TrimSpace(mt))
			major, isRange := strings.CutSuffix(mt, "/*")
			for i, want := range mediaTypes {
				if mt == want || mt == "*/*" || isRange && len(want) > len(major) && want[len(major)] == '/' && want[:len(major)] == major {
					seen |= 1 << i
				}
			}
			if seen == all {
				return true
			}
		}
	}
	return false
}

// isJSONContentType reports whether a Content-Type names application/json
// (with any valid parameters).
func isJSONContentType(ct string) bool {
	if ct == "application/json" { // the usual value, without a parse
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

func quoteHeader(v string) string {
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, v) + `"`
}

// peerKey returns the key of the peer ServeHTTP placed in r's context.
func peerKey(r *http.Request) string {
	p, _ := transport.PeerFromContext(r.Context())
	return p.Key
}

// startSession runs Serve for s on a new goroutine; ended, if not nil, is
// called with Serve's error once the session has ended.
func (h *Handler) startSession(s *httpSession, ctx context.Context, ended func(error)) {
	h.serveWG.Add(1)
	go func() {
		defer h.serveWG.Done()
		err := h.opts.Serve(ctx, s)
		s.close()
		if err != nil && !errors.Is(err, context.Canceled) {
			h.log.Warn("transport: session ended with an error", "session", s.sessionID(), "error", err)
		}
		if ended != nil {
			ended(err)
		}
	}()
}

func (h *Handler) servePOST(w http.ResponseWriter, r *http.Request) {
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		writeHTTPError(w, h.exchangeOf(r), http.StatusUnsupportedMediaType, codeServerError, "Unsupported Media Type: Content-Type must be application/json")
		return
	}
	if !accepts(r, "application/json", "text/event-stream") {
		writeHTTPError(w, h.exchangeOf(r), http.StatusNotAcceptable, codeServerError, "Not Acceptable: Accept must include application/json and text/event-stream")
		return
	}
	if !h.acquireStream(w, r) {
		return
	}
	defer h.releaseStream(r)
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	var into *envelope
	if v, _ := headerField(r, headerProtocolVersion); h.opts.Stateless || isModernHeader(v) {
		// An ephemeral session will serve it (unless the checks refuse
		// it): allocated with the envelope.
		e := new(ephemeral)
		e.env.eph, into = e, &e.env
	}
	env, derr := parseIncoming(body, h.opts.MaxDepth, into)
	if derr != nil {
		writeHTTPErrorID(w, h.exchangeOf(r), http.StatusBadRequest, derr.Code, derr.Message, derr.ID, nil)
		return
	}
	if h.closing.Load() && env.hasRequests() {
		writeHTTPError(w, h.exchangeOf(r).with(env), http.StatusServiceUnavailable, codeServerError, "Service Unavailable: shutting down")
		return
	}
	if isModernPOST(r, env) {
		h.serveModern(w, r, body, env)
		return
	}
	h.serveUnmarked(w, r, body, env)
}

// ephemeral is a session that serves one POST, its stream and that
// stream's attachment: they live and end together, and are allocated
// together.
type ephemeral struct {
	env envelope // the POST's message, when known to be ephemeral's before it is read (servePOST)
	s   httpSession
	st  stream
	a   attachment
	mc  msgContext // the context of the POST's message (MessageContext)
}

// serveEphemeral serves the requests of one POST with a fresh session that
// ends with the POST: the session of a stateless handler, or of a modern
// request (modern) in either mode. Unless the request is a legacy
// initialize, the session's context carries a StatelessRequest for
// revision v. A client that goes away cancels the requests.
func (h *Handler) serveEphemeral(w http.ResponseWriter, r *http.Request, body []byte, env *envelope, v string, modern bool) {
	// One modern request served on this goroutine (ServeRequest) has a
	// session that lives inside the POST: its context is (or derives
	// from) the POST's, so a client that goes away cancels the request,
	// and the request sees the POST's values (the verified token, for
	// one).
	refused := env.x.Refusal != nil // answered at once: in the POST, even a listen
	inPOST := modern && (env.x.Msg.Method != methodListen || refused) && h.opts.ServeRequest != nil
	parent := context.Background()
	if inPOST {
		parent = r.Context()
	}
	var inPOSTx *handoff.Request
	if inPOST {
		inPOSTx = env.handoff()
	}
	e := env.eph
	if e == nil {
		e = new(ephemeral)
	}
	s := &e.s
	h.initHTTPSession(s, parent, inPOSTx, 1) // one message: the POST's
	s.curCtx = &e.mc
	s.listen = modern && env.x.Msg.Method == methodListen && !refused
	h.mu.Lock()
	h.stateless[s] = struct{}{}
	h.mu.Unlock()
	st, dup := s.newStream(env.requests, &e.st)
	if st == nil {
		s.close()
		writeHTTPErrorID(w, h.exchangeOf(r).with(env), http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "Invalid Request: duplicate id in batch", []byte(dup), nil)
		return
	}
	st.modern, st.listen, st.x = modern, s.listen, env.handoff()
	ctx := s.ctx
	if modern || !env.initialize {
		ctx = transport.WithStatelessRequest(ctx, StatelessRequest{ProtocolVersion: v})
	}
	st.mu.Lock()
	a := st.attachLocked(w, &e.a)
	if h.opts.ResponseMode == ResponseSSE && !modern {
		// (A modern stream waits for its first message: an error
		// response then goes as JSON, with its HTTP status.)
		st.mode = modeSSE
		st.writeHeaderLocked(a, true)
	}
	st.mu.Unlock()
	if inPOST {
		// One request, served on this goroutine: no session goroutine,
		// no hand-off of the message.
		s.cur = inbound{msg: body, stream: st, env: env} // the values are ctx's own
		if err := h.opts.ServeRequest(ctx, s, body); err != nil {
			h.log.Warn("transport: request ended with an error", "error", err)
		}
		st.wait(r, a)
		s.close()
		return
	}
	h.startSession(s, ctx, nil)
	if !s.deliver(r, env, body, st) {
		s.close()
		return
	}
	if s.listen && h.opts.KeepAlive > 0 {
		go st.keepAlive(a, h.opts.KeepAlive)
	}
	finished := st.wait(r, a)
	s.endInput()
	if !finished {
		s.close() // nobody can receive the results: cancel the handlers
	}
}

// Shutdown shuts the handler down gracefully: new requests get 503 (the
// responses and notifications that in-flight requests wait for are still
// accepted), in-flight requests are answered, then every session ends and
// Shutdown waits for their Serve calls to return. If ctx ends first, the
// remaining sessions are closed at once and ctx's error is returned. Call
// it before http.Server.Shutdown, which waits for open streams.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.closing.Store(true)
	h.endListens()
	wait := time.Millisecond
	for h.inflight.Load() > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			h.Close()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
	h.Close()
	done := make(chan struct{})
	go func() { h.serveWG.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endListens ends the subscriptions/listen requests in progress: they are
// answered only when the client goes away, so Shutdown does not wait for
// them.
func (h *Handler) endListens() {
	h.mu.Lock()
	var listens []*httpSession
	for s := range h.stateless {
		if s.listen {
			listens = append(listens, s)
		}
	}
	h.mu.Unlock()
	for _, s := range listens {
		s.close()
	}
}

// Close ends every session at once (in-flight requests are cancelled) and
// refuses new requests with 503.
func (h *Handler) Close() error {
	h.closing.Store(true)
	h.refusals.close()
	h.mu.Lock()
	all := h.appendSessionsLocked(make([]*httpSession, 0, len(h.stateless)))
	for s := range h.stateless {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		s.close()
	}
	return nil
}

func (h *Handler) removeSession(s *httpSession) {
	h.mu.Lock()
	delete(h.stateless, s)
	h.forgetSessionLocked(s)
	h.mu.Unlock()
}
