package streamhttp

import (
	"context"
	"errors"
	"github.com/keelmcp/keel/transport"
)

// streamKey is the context key of the stream a request arrived on.
type streamKey struct{}

// msgContext is parent (cancellation, deadline, values) overlaid with the
// values of one HTTP request and the stream of the message.
//
// values is context.WithoutCancel(r.Context()): looking up the context
// package's own cancellation key there yields nil, so WithCancel on a
// msgContext attaches to parent's cancellation directly.
type msgContext struct {
	context.Context
	values context.Context
	stream *stream
}

func (c *msgContext) Value(key any) any {
	if _, ok := key.(streamKey); ok {
		if c.stream != nil {
			return c.stream
		}
	} else if c.values != nil {
		if v := c.values.Value(key); v != nil {
			return v
		}
	}
	return c.Context.Value(key)
}

// StatelessRequest is what Serve finds in its context in stateless mode
// (see transport.StatelessRequestFromContext).
type StatelessRequest = transport.StatelessRequest

// ErrNotResumable is returned by CloseSSEStream when the request is not
// served over a stream the client can resume: not over HTTP, a stateless
// handler, resumption disabled, or a session of a revision before
// 2025-11-25 (which forbids closing a stream before its response).
var ErrNotResumable = errors.New("transport: the request's stream is not resumable")

// CloseSSEStream closes the HTTP connection carrying the SSE stream of the
// request whose handler context is ctx, before the request is answered
// (SSE polling, 2025-11-25): the client reconnects with GET and
// Last-Event-ID after the retry interval and receives everything sent
// meanwhile, the response included. An unanswered request still on a JSON
// response is switched to SSE first (a priming event carries the event id
// and the retry interval). It returns ErrNotResumable when the stream
// cannot be resumed, and nil when the stream has no connection anyway.
func CloseSSEStream(ctx context.Context) error {
	st, _ := ctx.Value(streamKey{}).(*stream)
	if st == nil {
		return ErrNotResumable
	}
	return st.closeForPolling()
}
