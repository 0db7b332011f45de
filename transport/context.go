package transport

import (
	"context"
	"slices"
	"time"
)

// MessageContexter is implemented by transports whose incoming messages
// carry request-scoped values: the per-session Transport of the streamable
// HTTP handler (package streamhttp) attaches to each message the values of
// the HTTP request that carried it (for example the TokenInfo stored by
// streamhttp.RequireBearer) and the stream its responses and related
// messages go to.
//
// A server calls MessageContext on the reading goroutine right after Read,
// and derives the context of the request it is about to handle from the
// result; it must then Write the messages it sends about that request
// (progress, log messages, requests to the client) with that context or one
// derived from it, so that they travel on the request's stream.
type MessageContexter interface {
	// MessageContext returns a context with parent's deadline,
	// cancellation and values, overlaid with the values of the message
	// most recently returned by Read.
	MessageContext(parent context.Context) context.Context
}

// StatelessRequest is what a server finds in its context (see
// StatelessRequestFromContext) when an HTTP handler asks it to serve one
// POST with a session that lives only as long as the POST. For a legacy
// request (stateless mode) the session is already initialized: there is no
// handshake, the client speaks ProtocolVersion (from the
// MCP-Protocol-Version header; 2025-03-26 when absent) and has declared no
// capabilities. For a request of revision 2026-07-28 (in either mode)
// ProtocolVersion is the revision its params._meta names, and every request
// on the session carries its own capabilities.
type StatelessRequest struct {
	ProtocolVersion string
}

type statelessKey struct{}

// valueContext is a context carrying one value of type V, found by the key
// type K (a pointer to it is the value): one allocation, where
// context.WithValue would need two (the context and the boxed value).
type valueContext[K comparable, V any] struct {
	context.Context
	v V
}

// Value implements context.Context.
func (c *valueContext[K, V]) Value(key any) any {
	if _, ok := key.(K); ok {
		return &c.v
	}
	return c.Context.Value(key)
}

// WithStatelessRequest returns a context carrying sr (used by stateless
// HTTP handlers when they start a session).
func WithStatelessRequest(ctx context.Context, sr StatelessRequest) context.Context {
	return &valueContext[statelessKey, StatelessRequest]{Context: ctx, v: sr}
}

// StatelessRequestFromContext reports whether ctx is the context of a
// session started by a stateless HTTP handler for a request other than
// initialize, and if so the revision the client speaks.
func StatelessRequestFromContext(ctx context.Context) (StatelessRequest, bool) {
	sr, ok := ctx.Value(statelessKey{}).(*StatelessRequest)
	if !ok {
		return StatelessRequest{}, false
	}
	return *sr, true
}

// TokenInfo is what a token verifier learned about a bearer token: who it
// was issued to, for which resource and scopes, until when.
type TokenInfo struct {
	// Subject identifies the user (or client) the token was issued to;
	// sessions are bound to it.
	Subject string
	// ClientID is the OAuth client the token was issued to, if known.
	ClientID string
	// Scopes are the scopes the token grants.
	Scopes []string
	// Audience lists the resources (RFC 8707) the token is valid for.
	Audience []string
	// Expiry is when the token expires (zero: not known to expire).
	Expiry time.Time
	// Extra carries verifier-specific claims.
	Extra map[string]any
}

// HasScope reports whether the token grants scope.
func (t *TokenInfo) HasScope(scope string) bool { return t != nil && slices.Contains(t.Scopes, scope) }

type tokenInfoKey struct{}

// WithTokenInfo returns a context carrying info (used by bearer-token
// middleware after verification).
func WithTokenInfo(ctx context.Context, info *TokenInfo) context.Context {
	return context.WithValue(ctx, tokenInfoKey{}, info)
}

// TokenInfoFromContext returns the verified token of the HTTP request a
// context derives from, or nil.
func TokenInfoFromContext(ctx context.Context) *TokenInfo {
	info, _ := ctx.Value(tokenInfoKey{}).(*TokenInfo)
	return info
}
