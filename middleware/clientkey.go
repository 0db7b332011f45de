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
// limits. The limits also apply to the call's peer (mcp.PeerFromContext)
// whatever the function says: a key finer than the peer (for example the
// peer's key and a name the client gives) splits the peer's share, and
// can never enlarge it. An empty key exempts the call from per-client
// and per-peer limits (the total number of slots still applies). It is called once per call per stage,
// concurrently: keep it fast and safe for concurrent use. Keys are held
// while a client has calls running or rate-limit state; a key longer than
// 128 bytes is replaced by its SHA-256 digest.
type ClientKeyFunc func(ctx context.Context, call *mcp.ToolCall) string

// Prefixes of the keys DefaultClientKey returns: those of mcp.Peer.Key.
const (
	// ClientKeySubject prefixes the subject of a verified bearer token.
	ClientKeySubject = transport.PeerKeySubject
	// ClientKeyClient prefixes the client id of a verified bearer token
	// that names no subject.
	ClientKeyClient = transport.PeerKeyClient
	// ClientKeyAddr prefixes the remote address of an anonymous HTTP
	// request (IPv6: its /64), through trusted proxies only.
	ClientKeyAddr = transport.PeerKeyAddr
	// ClientKeyConn prefixes the id of a connection that is its own peer
	// (stdio, the in-memory pipe).
	ClientKeyConn = transport.PeerKeyConn
)

// DefaultClientKey is the ClientKeyFunc used when none is configured: the
// key of the call's peer (mcp.PeerFromContext), which every per-peer
// bound of keel shares:
//
//  1. "subject:" + the subject of the request's verified bearer token,
//     else "client:" + its client id, whatever session or connection the
//     request came on: a user does not get more slots by opening more
//     sessions;
//  2. "addr:" + the remote address of a request without a token over
//     HTTP (an IPv6 address by its /64 prefix), read through the
//     handler's trusted proxies only (streamhttp.Options.TrustedProxies);
//  3. "conn:" + the connection's id over stdio or the in-memory pipe;
//  4. "" (no per-client limits) outside a Server: a call without a
//     session, as in tests that run a Chain directly.
//
// What a client says about itself (its clientInfo name, the sessions it
// opens) is no part of the key, so it can never enlarge its share: two
// names or a thousand sessions from one address share one fair share and
// one rate limit. A ClientKeyFunc of your own may return a finer key (for
// example a name or an API key) to split a peer's share among its
// clients: each client is held to the share, and the peer still is too.
func DefaultClientKey(ctx context.Context, call *mcp.ToolCall) string {
	if k := mcp.PeerFromContext(ctx).Key; k != "" {
		return k
	}
	if call != nil && call.Session != nil { // a call whose context is not its request's
		return transport.PeerOfConn(call.Session.ConnectionCorrelationID()).Key
	}
	return ""
}

// shareKeys returns the keys a call's per-client limits count under (f nil
// = DefaultClientKey): its peer's key, and the client key f gives when it
// is finer than the peer ("" when it is the peer's own). Both are "" when
// f exempts the call.
func shareKeys(f ClientKeyFunc, ctx context.Context, c *Call) (peer, client string) {
	client = clientKeyOf(f, ctx, c)
	if client == "" {
		return "", ""
	}
	if peer = DefaultClientKey(ctx, c.ToolCall); peer == client {
		client = ""
	}
	return peer, client
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
