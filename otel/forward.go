package otel

import (
	"context"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/transport"
)

// forward carries the optional interfaces of package transport through a
// wrapper, so that ServerTransport and ClientTransport keep what the
// Server and Client ask of the transport they wrap: the peer watch
// (handlers end when the client goes away), the message size limit, the
// per-message context of streamable HTTP and its hand-off of each message
// (through which a 2026-07-28 answer gets its HTTP status), the session id. Where the
// wrapped transport lacks one, the answer is that of a transport without
// it (a channel that never closes, no limit, the parent context, no id).
type forward struct {
	transport.Transport
}

// PeerGone forwards transport.PeerWatcher.
func (f forward) PeerGone() <-chan struct{} {
	if pw, ok := f.Transport.(transport.PeerWatcher); ok {
		return pw.PeerGone()
	}
	return nil
}

// MaxMessageBytes forwards transport.MessageLimiter.
func (f forward) MaxMessageBytes() int {
	if ml, ok := f.Transport.(transport.MessageLimiter); ok {
		return ml.MaxMessageBytes()
	}
	return 0
}

// MessageContext forwards transport.MessageContexter.
func (f forward) MessageContext(parent context.Context) context.Context {
	if mc, ok := f.Transport.(transport.MessageContexter); ok {
		return mc.MessageContext(parent)
	}
	return parent
}

// Handoff forwards handoff.Carrier: streamable HTTP's hand-off of the
// message just read, found through the wrappers inside (handoff.CarrierOf).
func (f forward) Handoff() *handoff.Request {
	if c := handoff.CarrierOf(f.Transport); c != nil {
		return c.Handoff()
	}
	return nil
}

// Unwrap returns the wrapped transport (see transport.Transport).
func (f forward) Unwrap() transport.Transport { return f.Transport }

// SessionID forwards the session id of a transport that has one (the
// streamable HTTP client transport).
func (f forward) SessionID() string {
	if s, ok := f.Transport.(interface{ SessionID() string }); ok {
		return s.SessionID()
	}
	return ""
}

var (
	_ transport.PeerWatcher      = forward{}
	_ transport.MessageLimiter   = forward{}
	_ transport.MessageContexter = forward{}
	_ handoff.Carrier            = forward{}
)
