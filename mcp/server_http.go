package mcp

import (
	"context"

	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// TokenInfoFromContext returns the verified bearer token of the HTTP
// request that carried the current MCP request (see streamhttp.RequireBearer),
// or nil when there is none (not over HTTP, or no authentication).
func TokenInfoFromContext(ctx context.Context) *transport.TokenInfo {
	return transport.TokenInfoFromContext(ctx)
}

// applyTransportContext starts the session of a stateless HTTP handler:
// per request for revision 2026-07-28, else already initialized at the
// revision the client speaks (startStateless).
func (ss *Session) applyTransportContext(ctx context.Context) {
	sr, ok := transport.StatelessRequestFromContext(ctx)
	if !ok {
		return
	}
	v := sr.ProtocolVersion
	if revision.PerRequest(v) {
		ss.modernOnly = true // every request carries its own revision
		return
	}
	startStateless(ss, v) // rev2025_handshake.go
}

// Peer is who a request comes from: see transport.Peer.
type Peer = transport.Peer

// PeerFromContext returns the peer of the request ctx belongs to, the key
// of every per-peer bound: the Peer its transport placed in the context
// (the streamable HTTP handler: the verified token's subject or client
// id, else the remote address through trusted proxies only), else the
// subject or client id of a verified token, else the connection the
// request came on (stdio, the in-memory pipe). A name the client gives
// itself is never part of it. Outside a Server (no session) it is the zero
// Peer, and no per-peer bound applies.
func PeerFromContext(ctx context.Context) Peer {
	if p, ok := transport.PeerFromContext(ctx); ok {
		return p
	}
	if p, ok := transport.PeerOfToken(TokenInfoFromContext(ctx)); ok {
		return p
	}
	if ss := SessionFromContext(ctx); ss != nil {
		return connPeerOf(ss) // once per connection
	}
	return Peer{}
}
