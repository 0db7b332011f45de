package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/transport"
)

// ErrClosed is returned by calls on a closed session or client.
var ErrClosed = errors.New("mcp: connection closed")

// isClosed reports whether err says the connection is closed (ours, or
// the transport's): nothing to log when a peer that went away is not
// answered.
func isClosed(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, transport.ErrClosed)
}

// conn is the JSON-RPC engine shared by server sessions and clients: it
// encodes and writes messages, numbers outgoing requests and routes their
// responses back to the caller.
type conn struct {
	t        transport.Transport
	maxDepth int
	log      *slog.Logger
	// maxOut bounds one outgoing message (0: none): the transport's own
	// limit (transport.MessageLimiter), so that nothing is sent that the
	// peer, at the same settings, would discard unanswered.
	maxOut int

	closed atomic.Bool
	done   chan struct{} // closed when the connection is closed; made on first use (doneChan), guarded by mu

	mu      sync.Mutex
	pending map[int64]chan *jsonrpc.Message
	nextID  atomic.Int64

	// out, if set, is the send middleware chain (ServerOptions.SendMiddleware)
	// every outgoing request and notification of a server session goes
	// through; ss is that session.
	out SendHandler
	ss  *Session
}

func newConn(t transport.Transport, maxDepth int, log *slog.Logger) *conn {
	c := new(conn)
	initConn(c, t, maxDepth, log)
	return c
}

// initConn makes c, a zero conn, the connection newConn returns (a server
// Session holds its conn).
func initConn(c *conn, t transport.Transport, maxDepth int, log *slog.Logger) {
	c.t, c.maxDepth, c.log = t, maxDepth, log
	if ml, ok := t.(transport.MessageLimiter); ok {
		c.maxOut = ml.MaxMessageBytes()
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// send encodes with enc into a pooled buffer and writes the message. After
// the connection is closed nothing is written.
func (c *conn) send(ctx context.Context, enc func([]byte) ([]byte, error)) error {
	if c.closed.Load() {
		return ErrClosed
	}
	bp := bufPool.Get().(*[]byte)
	b, err := enc((*bp)[:0])
	if err == nil && c.maxOut > 0 && len(b) > c.maxOut {
		err = &transport.MessageTooLargeError{Limit: c.maxOut, Size: len(b)}
	}
	if err == nil {
		err = c.t.Write(ctx, b)
	}
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		bufPool.Put(bp)
	}
	return err
}

// errNotSerializable is returned by writeResult for a result that cannot be
// encoded; nothing was written, and the caller answers with an error.
var errNotSerializable = errors.New("mcp: result not serializable")

func (c *conn) writeResult(ctx context.Context, id jsontext.Value, result any) error {
	err := c.send(ctx, func(b []byte) ([]byte, error) { return jsonrpc.AppendResponse(b, id, result) })
	if err != nil && isSemantic(err) { // a result that cannot be encoded
		c.log.Error("mcp: result not serializable", "error", err)
		return errNotSerializable
	}
	return err
}

// tooLarge returns err as a *transport.MessageTooLargeError, or nil: a
// message over the connection's limit, not sent (see conn.maxOut).
func tooLarge(err error) *transport.MessageTooLargeError {
	if err == nil {
		return nil // before the variable errors.As needs, which is allocated
	}
	return asTooLarge(err)
}

func asTooLarge(err error) *transport.MessageTooLargeError {
	var e *transport.MessageTooLargeError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// isSemantic reports whether err is a *jsonv2.SemanticError (apart from its
// callers, so that the variable errors.As needs is allocated only for an
// error).
func isSemantic(err error) bool {
	var se *jsonv2.SemanticError
	return errors.As(err, &se)
}

func (c *conn) writeError(ctx context.Context, id jsontext.Value, e *Error) error {
	return c.send(ctx, func(b []byte) ([]byte, error) { return jsonrpc.AppendError(b, id, e.Code, e.Message, e.Data) })
}

func (c *conn) notify(ctx context.Context, method string, params any) error {
	if c.out != nil {
		return c.out(ctx, &Outgoing{Session: c.ss, Method: method, Params: params, IsNotification: true})
	}
	return c.writeNotification(ctx, method, params)
}

func (c *conn) writeNotification(ctx context.Context, method string, params any) error {
	return c.send(ctx, func(b []byte) ([]byte, error) { return jsonrpc.AppendNotification(b, method, params) })
}

// call sends a request and waits for its response, decoding the result into
// result (which may be nil). A JSON-RPC error response is returned as *Error.
// When ctx ends first, onCancel (if not nil) is told the request id.
func (c *conn) call(ctx context.Context, method string, params, result any, onCancel func(id int64, reason string)) error {
	if c.out != nil {
		return c.out(ctx, &Outgoing{Session: c.ss, Method: method, Params: params, Result: result, onCancel: onCancel})
	}
	return c.request(ctx, method, params, result, onCancel)
}

// addPendingLocked records ch as the waiter of the response to request
// id, in a table made on first use (most connections never ask); c.mu is
// held.
func (c *conn) addPendingLocked(id int64, ch chan *jsonrpc.Message) {
	if c.pending == nil {
		c.pending = map[int64]chan *jsonrpc.Message{}
	}
	c.pending[id] = ch
}

func (c *conn) request(ctx context.Context, method string, params, result any, onCancel func(id int64, reason string)) error {
	id := c.nextID.Add(1)
	ch := make(chan *jsonrpc.Message, 1)
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	c.addPendingLocked(id, ch)
	done := c.doneLocked()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	rawID := jsontext.Value(strconv.AppendInt(nil, id, 10))
	if err := c.send(ctx, func(b []byte) ([]byte, error) { return jsonrpc.AppendRequest(b, rawID, method, params) }); err != nil {
		return err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			e := &Error{Code: m.Error.Code, Message: m.Error.Message}
			if m.Error.Data != nil {
				e.Data = json.RawMessage(m.Error.Data)
			}
			return e
		}
		if result == nil {
			return nil
		}
		if err := jsonrpc.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("mcp: decoding %s result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		if onCancel != nil {
			onCancel(id, context.Cause(ctx).Error())
		}
		return ctx.Err()
	case <-done:
		return ErrClosed
	}
}

// deliver routes a response to the request waiting for it; responses to
// unknown ids are logged and dropped.
func (c *conn) deliver(m *jsonrpc.Message) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	c.mu.Lock()
	ch, ok := c.pending[id]
	c.mu.Unlock()
	if err != nil || !ok {
		c.log.Warn("mcp: response to an unknown request id", logclip.Attr("id", string(m.ID)))
		return
	}
	select {
	case ch <- m:
	default: // a second response for the same id
		c.log.Warn("mcp: duplicate response", logclip.Attr("id", string(m.ID)))
	}
}

// close marks the connection closed: nothing more is written and waiting
// calls return ErrClosed.
func (c *conn) close() {
	c.mu.Lock()
	if !c.closed.Swap(true) && c.done != nil {
		close(c.done)
	}
	c.mu.Unlock()
}

// doneChan returns a channel that is closed when the connection is closed.
// It is made on first use: most connections of one request never wait on
// it.
func (c *conn) doneChan() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doneLocked()
}

// doneLocked is doneChan; c.mu is held.
func (c *conn) doneLocked() <-chan struct{} {
	if c.done == nil {
		c.done = make(chan struct{})
		if c.closed.Load() {
			close(c.done)
		}
	}
	return c.done
}

// isEOF reports whether err ends the input stream.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, transport.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}
