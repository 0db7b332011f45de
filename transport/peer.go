package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
)

// Peer is who a request comes from, as far as the server can tell without
// taking the peer's word for it: a verified credential, else the network
// address the request came from, else the connection it came on. What a
// client says about itself (its clientInfo name, a session it opened)
// never changes its Peer. Every per-peer quota of keel (request slots, the
// task pool, finished tasks, listen streams, sessions, HTTP streams, rate
// limits) is keyed by Peer.Key, so a peer's share is one share, however
// many names, sessions or connections it uses.
//
// A transport places the Peer of each request in the request's context
// (WithPeer): the streamable HTTP handler from the verified bearer token
// or the remote address (through its trusted proxies only); a server
// treats a connection that carries none (stdio, the in-memory pipe) as a
// peer of its own.
type Peer struct {
	// Key names the peer for quotas: requests with equal keys share every
	// per-peer bound. It is one of
	//
	//	"subject:" + the verified token's subject
	//	"client:"  + the verified token's client id (a token without subject)
	//	"addr:"    + the remote IP address; an IPv6 address by its /64
	//	             prefix ("addr:2001:db8:1:2::/64"), as one host may use
	//	             every address of its /64
	//	"conn:"    + the connection's id (stdio, in-memory, any transport
	//	             that knows no address)
	//
	// and at most MaxPeerKeyBytes long (a longer key is replaced by
	// "sha256:" and its digest).
	Key string
	// Addr is the remote IP address the request came from, after trusted
	// proxies; the zero Addr when the transport knows none.
	Addr netip.Addr
}

// Prefixes of Peer.Key: each kind of key has its own, so that keys of
// different kinds never collide (a subject that reads "client:app" is
// "subject:client:app").
const (
	// PeerKeySubject prefixes the subject of a verified bearer token.
	PeerKeySubject = "subject:"
	// PeerKeyClient prefixes the client id of a verified bearer token
	// without a subject (client credentials).
	PeerKeyClient = "client:"
	// PeerKeyAddr prefixes a remote IP address, or an IPv6 /64 prefix.
	PeerKeyAddr = "addr:"
	// PeerKeyConn prefixes the id of a connection that knows no address
	// (stdio, in-memory).
	PeerKeyConn = "conn:"
)

// MaxPeerKeyBytes bounds Peer.Key: longer keys (a long token subject) are
// replaced by their SHA-256 digest, so that what a server keeps per peer
// stays small.
const MaxPeerKeyBytes = 128

// boundKey returns k, or its digest when k is over MaxPeerKeyBytes.
func boundKey(k string) string {
	if len(k) <= MaxPeerKeyBytes {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PeerOfToken returns the peer a verified token names: its subject, else
// its client id; false when the token names neither (or is nil), which a
// verifier must not admit (streamhttp.RequireBearer refuses it).
func PeerOfToken(ti *TokenInfo) (Peer, bool) {
	switch {
	case ti == nil:
		return Peer{}, false
	case ti.Subject != "":
		return Peer{Key: boundKey(PeerKeySubject + ti.Subject)}, true
	case ti.ClientID != "":
		return Peer{Key: boundKey(PeerKeyClient + ti.ClientID)}, true
	}
	return Peer{}, false
}

// PeerOfAddr returns the peer of a remote IP address: the address itself
// for IPv4 (an IPv4-mapped IPv6 address counts as IPv4), its /64 prefix
// for IPv6. An invalid address gives the zero Peer.
func PeerOfAddr(a netip.Addr) Peer {
	if !a.IsValid() {
		return Peer{}
	}
	a = a.Unmap().WithZone("")
	var buf [64]byte // one allocation: the key itself
	b := append(buf[:0], PeerKeyAddr...)
	if a.Is4() {
		return Peer{Key: string(a.AppendTo(b)), Addr: a}
	}
	p, _ := a.Prefix(64)
	return Peer{Key: string(p.AppendTo(b)), Addr: a}
}

// PeerOfConn returns the peer of a connection that is its own peer (stdio,
// in-memory), named by the connection's id.
func PeerOfConn(id string) Peer { return Peer{Key: boundKey(PeerKeyConn + id)} }

type peerKey struct{}

// WithPeer returns a context carrying p (used by transports: the peer of
// the request or session the context belongs to).
func WithPeer(ctx context.Context, p Peer) context.Context {
	return &valueContext[peerKey, Peer]{Context: ctx, v: p}
}

// PeerFromContext returns the Peer a transport placed in ctx (WithPeer),
// and whether there is one. Servers read it through mcp.PeerFromContext,
// which also knows the peer of a connection without one.
func PeerFromContext(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(*Peer)
	if !ok || p.Key == "" {
		return Peer{}, false
	}
	return *p, true
}
