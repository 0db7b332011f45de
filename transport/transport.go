// Package transport carries MCP messages between a client and a server. A
// Transport moves whole JSON-RPC messages (one object or one batch array);
// framing, buffering and backpressure are its business, meaning is not.
//
// keel ships a newline-delimited stdio transport (Stdio) for servers that a
// client launches as a subprocess, its client side (NewCommand: start the
// server process, talk to it, stop it), and a connected in-memory pair
// (NewPipe) for tests. The streamable HTTP transport lives in package
// transport/streamhttp (so that stdio servers do not link net/http):
// streamhttp.Handler serves MCP sessions, stateful or stateless, on one
// endpoint; streamhttp.ClientTransport is its client side; RequireBearer
// and ProtectedResourceMetadataHandler there make an HTTP server an OAuth
// resource server, as the MCP authorization specification asks. This
// package keeps what both share: the context helpers for token info,
// stateless requests and the Peer a request comes from (the key of every
// per-peer bound).
package transport

import (
	"context"
	"errors"
	"fmt"
)

// Transport is one bidirectional connection carrying JSON-RPC messages.
//
// Read and Write may be called concurrently with each other; Read is called
// by one goroutine at a time, Write by any number (writes are ordered and
// never interleaved).
//
// A transport that wraps another (to count, trace or log its messages)
// should forward MessageContexter, MessageLimiter and PeerWatcher when the
// wrapped one implements them, and implement Unwrap() Transport returning
// the wrapped transport (never a nil pointer of a concrete type): through
// it the server finds what the streamable HTTP transport hands over with
// each message it reads, among which where a 2026-07-28 error answer's
// HTTP status (404, 400) is recorded; without it such an answer goes out
// with status 200. What was handed over is used only for a message that
// holds the bytes the wrapped Read returned (a copy will do): a wrapper
// that returns other bytes (or a message of its own) has them read as
// they are.
type Transport interface {
	// Read returns the next message without its framing. The slice is
	// valid only until the next call to Read. At the end of input Read
	// returns io.EOF. A message over the size limit is reported as a
	// *MessageTooLargeError, after which Read may be called again.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one message. msg must not contain framing; Write does not
	// retain it after returning. Write blocks while the peer is not
	// reading (backpressure) until ctx is done or the transport is closed.
	Write(ctx context.Context, msg []byte) error
	// Close releases the transport; pending and later calls fail with
	// ErrClosed (or io.EOF for Read).
	Close() error
	// Kind names the transport ("stdio", "stream", "memory", "http"), for
	// policies such as "admin operations over local stdio only". Only a
	// transport over the process's own standard streams is "stdio" (see
	// Stdio).
	Kind() string
}

// ErrClosed is returned by operations on a closed transport.
var ErrClosed = errors.New("transport: closed")

// ErrSessionNotFound is matched (errors.Is) by a Write error meaning the
// server no longer knows the transport's session (it expired or was
// terminated; HTTP 404 on the streamable HTTP transport). The transport has
// forgotten the session: the next initialize request starts a new one,
// which is what mcp.Client does unless told not to.
var ErrSessionNotFound = errors.New("transport: session not found")

// DefaultMaxMessageBytes is the default limit on one incoming message: 4 MiB.
const DefaultMaxMessageBytes = 4 << 20

// MessageTooLargeError reports an incoming message over the size limit. The
// message was discarded; the connection is still usable.
type MessageTooLargeError struct {
	Limit int // the MaxMessageBytes in force
	Size  int // bytes read before the message was discarded (at least Limit+1)
}

// Error implements error; the message names the MaxMessageBytes limit.
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("transport: message exceeds MaxMessageBytes (%d bytes)", e.Limit)
}

// PeerWatcher is implemented by transports that learn when their peer has
// gone away — not merely stopped sending: the in-memory pipe when either
// end is closed, Stdio when a write fails (the reader of its output is
// gone), a streamable HTTP session when the client deletes it or it
// expires. A server ends the contexts of the handlers still running for
// that peer: nobody is left to receive their answers.
type PeerWatcher interface {
	// PeerGone returns a channel that is closed once the peer is gone.
	PeerGone() <-chan struct{}
}

// MessageLimiter is implemented by transports that bound the size of one
// message: Stdio and the in-memory pipe (their MaxMessageBytes, which
// bounds what they read) and the streamable HTTP server's sessions. Package
// mcp writes no message larger than the limit: with both ends at the same
// settings, what one end sends the other can read. A response over the
// limit is answered instead with an error naming MaxMessageBytes, so that
// the peer is never left waiting for an answer it would discard.
type MessageLimiter interface {
	// MaxMessageBytes returns the limit on one message, in bytes.
	MaxMessageBytes() int
}
