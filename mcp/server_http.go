package mcp

import (
	"context"

	"github.com/keelmcp/keel/transport"
)

// HTTPHandler returns a streamable HTTP handler (transport.HTTPHandler)
// serving s: mount it on your endpoint path ("/mcp") in a net/http server.
// opts may be nil; its Serve is replaced by s.Run, and SupportedVersions,
// MaxDepth and Logger default to the server's. In stateless mode
// (opts.Stateless) each POST is served by a fresh session that is already
// initialized at the revision of its MCP-Protocol-Version header.
//
// Handlers see the values of the HTTP request that carried their request
// in their context: TokenInfoFromContext returns the caller's verified
// token when the handler is wrapped in transport.RequireBearer. Messages a
// handler sends (progress, log messages, requests to the client) travel on
// its request's SSE stream.
func (s *Server) HTTPHandler(opts *transport.HTTPOptions) *transport.HTTPHandler {
	var o transport.HTTPOptions
	if opts != nil {
		o = *opts
	}
	o.Serve = s.Run
	if o.SupportedVersions == nil {
		o.SupportedVersions = SupportedVersions
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = s.opts.MaxDepth
	}
	if o.Logger == nil {
		o.Logger = s.log
	}
	return transport.NewHTTPHandler(&o)
}

// TokenInfoFromContext returns the verified bearer token of the HTTP
// request that carried the current MCP request (see transport.RequireBearer),
// or nil when there is none (not over HTTP, or no authentication).
func TokenInfoFromContext(ctx context.Context) *transport.TokenInfo {
	return transport.TokenInfoFromContext(ctx)
}

// applyTransportContext starts a session of a stateless HTTP handler
// already initialized: RUNNING at the revision the client speaks, with no
// declared client capabilities.
func (ss *Session) applyTransportContext(ctx context.Context) {
	sr, ok := transport.StatelessRequestFromContext(ctx)
	if !ok {
		return
	}
	v := sr.ProtocolVersion
	if !IsSupportedVersion(v) {
		v = LatestVersion
	}
	ss.mu.Lock()
	ss.version = v
	ss.mu.Unlock()
	ss.state.Store(int32(StateRunning))
}

// noteMessage records the context the transport attached to the message
// just read (HTTP: the request's values and stream), or nil; the reading
// goroutine calls it after each Read.
func (ss *Session) noteMessage() {
	ss.msgCtx = nil
	if mc, ok := ss.conn.t.(transport.MessageContexter); ok {
		ss.msgCtx = mc.MessageContext(ss.ctx)
	}
}

// messageContext is the parent context of a request being handled: the
// session's context, overlaid with what the transport attached to the
// request's message. Only the reading goroutine may call it, while it
// handles the message.
func (ss *Session) messageContext() context.Context {
	if ss.msgCtx != nil {
		return ss.msgCtx
	}
	return ss.ctx
}
