package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrPeerUnresponsive is matched (errors.Is) by the error of a connection
// closed because its peer did not answer a keep-alive ping in time
// (ServerOptions.KeepAlive, ClientOptions.KeepAlive).
var ErrPeerUnresponsive = errors.New("mcp: the peer did not answer a keep-alive ping")

// keepAlive pings through ping every interval, each ping waiting at most
// interval, until ctx ends. A ping that gets no answer (a timeout, a
// broken transport) ends the loop with fail(ErrPeerUnresponsive, wrapping
// the cause); an answer, even an error response, proves the peer alive.
// ready reports whether the connection may carry a ping now (the
// handshake is done); ticks before that are skipped.
func keepAlive(ctx context.Context, interval time.Duration, ready func() bool, ping func(context.Context) error, fail func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !ready() {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := ping(pctx)
		cancel()
		var answered *Error
		if err == nil || errors.As(err, &answered) {
			continue
		}
		if ctx.Err() != nil {
			return // the connection ended meanwhile
		}
		fail(fmt.Errorf("%w within %v: %w", ErrPeerUnresponsive, interval, err))
		return
	}
}
