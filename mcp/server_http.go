package mcp

import (
	"context"

	"github.com/keelmcp/keel/transport"
)

// TokenInfoFromContext returns the verified bearer token of the HTTP
// request that carried the current MCP request (see streamhttp.RequireBearer),
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
	if IsModernEra(v) {
		ss.modernOnly = true // every request carries its own revision
		return
	}
	if !IsSupportedVersion(v) {
		v = LatestVersion
	}
	ss.mu.Lock()
	ss.version = v
	ss.mu.Unlock()
	ss.state.Store(int32(StateRunning))
}
