package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// ClientKeyFunc says which client a tools/call comes from, for the limits
// that apply per client: the fair share of concurrency slots (Limiter) and
// the rate limit (RateLimiter). Calls with the same key share those
// limits. An empty key exempts the call from per-client limits (the total
// number of slots still applies). It is called once per call per stage,
// concurrently: keep it fast and safe for concurrent use. Keys are held
// while a client has calls running or rate-limit state; a key longer than
// 128 bytes is replaced by its SHA-256 digest.
type ClientKeyFunc func(ctx context.Context, call *mcp.ToolCall) string

// Prefixes of the keys DefaultClientKey returns.
const (
	// ClientKeySubject prefixes the subject of a verified bearer token.
	ClientKeySubject = "subject:"
	// ClientKeySession prefixes the connection correlation id of a
	// session.
	ClientKeySession = "session:"
	// ClientKeyAnonymous is the key of requests that carry no identity
	// (see DefaultClientKey); a self-reported client name may follow it
	// after a colon.
	ClientKeyAnonymous = "anonymous"
)

// maxClientNameBytes bounds the self-reported client name in a key.
const maxClientNameBytes = 64

// DefaultClientKey is the ClientKeyFunc used when none is configured. It
// chooses, in this order:
//
//  1. "subject:" + the subject of the request's verified bearer token
//     (mcp.TokenInfoFromContext), whatever session or connection the
//     request came on: a user does not get more slots by opening more
//     sessions;
//  2. "session:" + the session's connection correlation id, for a request
//     on a session that outlives it (a 2025 session over any transport, a
//     stdio or in-memory connection);
//  3. "anonymous" for a request without a token on a session that lives
//     only for its HTTP POST (every 2026-07-28 request over HTTP, and
//     legacy requests to a stateless handler): such a session says
//     nothing about who sent it. When the request's _meta names the
//     client software (io.modelcontextprotocol/clientInfo), its name is
//     appended ("anonymous:" + name, at most 64 bytes of it), which
//     separates different client programs; the name is self-reported, so
//     it separates honest clients only. All anonymous requests otherwise
//     share one key, and so one fair share and one rate limit: to give
//     each caller its own, authenticate them, or supply a ClientKeyFunc
//     that uses what your deployment knows (a verified client address,
//     an API key);
//  4. "" (no per-client limits) outside a Server: a call without a
//     session, as in tests that run a Chain directly.
func DefaultClientKey(ctx context.Context, call *mcp.ToolCall) string {
	if ti := mcp.TokenInfoFromContext(ctx); ti != nil && ti.Subject != "" {
		return ClientKeySubject + ti.Subject
	}
	if call == nil || call.Session == nil {
		return ""
	}
	if _, ephemeral := transport.StatelessRequestFromContext(ctx); !ephemeral {
		return ClientKeySession + call.Session.ConnectionCorrelationID()
	}
	if name := clientName(ctx); name != "" {
		return ClientKeyAnonymous + ":" + name
	}
	return ClientKeyAnonymous
}

// clientName returns the client's self-reported name of the request ctx
// belongs to (a 2026-07-28 request's _meta clientInfo), cut to
// maxClientNameBytes.
func clientName(ctx context.Context) string {
	req := mcp.RequestFromContext(ctx)
	if req == nil {
		return ""
	}
	name := req.ClientInfo().Name
	if len(name) > maxClientNameBytes {
		name = name[:maxClientNameBytes]
	}
	return name
}

// maxClientKeyBytes bounds the keys the per-client stages hold.
const maxClientKeyBytes = 128

// clientKeyOf computes the call's client key with f (nil =
// DefaultClientKey), bounded in size.
func clientKeyOf(f ClientKeyFunc, ctx context.Context, c *Call) string {
	if f == nil {
		f = DefaultClientKey
	}
	k := f(ctx, c.ToolCall)
	if len(k) > maxClientKeyBytes {
		sum := sha256.Sum256([]byte(k))
		k = "sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}
