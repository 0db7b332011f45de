package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/transport"
)

// clientReader reads what the server sends a connected Client, on one
// goroutine (run), and hands each message on: a response to the call
// waiting for it, a notification to the client's callbacks, a request to
// the client's handlers (clientSide); a 2025 server's ping it answers
// itself.
type clientReader struct {
	cn   *conn
	opts *ClientOptions // the Client's, read-only: its callbacks
	log  *slog.Logger
	side *clientSide  // serves the server's requests (client_handlers.go)
	mod  *modernState // awaits subscription acknowledgements (client_rev2026_listen.go)

	done chan struct{} // closed when run returns
	mu   sync.Mutex
	err  error // why reading stopped (nil at the end of the input)
}

// run reads until the input ends, then closes the connection and done.
func (r *clientReader) run() {
	defer close(r.done)
	defer r.cn.close()
	for {
		msg, err := r.cn.t.Read(context.Background())
		if err != nil {
			var tooLarge *transport.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				r.log.Warn("mcp: client dropped an oversized message", "error", err)
				continue
			}
			if !isEOF(err) {
				r.mu.Lock()
				r.err = err
				r.mu.Unlock()
			}
			return
		}
		if jsonrpc.IsBatch(msg) {
			elems, derr := jsonrpc.SplitBatch(msg)
			if derr != nil {
				r.log.Warn("mcp: client received a malformed batch", "error", derr)
				continue
			}
			for _, e := range elems {
				r.handle(e)
			}
			continue
		}
		r.handle(msg)
	}
}

// handle decodes one message and hands it on.
func (r *clientReader) handle(raw []byte) {
	m, derr := jsonrpc.Decode(raw, r.cn.maxDepth)
	if derr != nil {
		r.log.Warn("mcp: client received a malformed message", "error", derr)
		if derr.ID != nil && string(derr.ID) != "null" {
			_ = r.cn.writeError(context.Background(), derr.ID, &Error{Code: derr.Code, Message: derr.Message})
		}
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		if m.ID != nil {
			r.cn.deliver(&m)
		}
	case jsonrpc.KindNotification:
		r.notification(&m)
	case jsonrpc.KindRequest:
		if r.answerPing(&m) || r.side.serve(r.cn, &m) { // answerPing: rev2025_client_session.go
			return
		}
		_ = r.cn.writeError(context.Background(), m.ID, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + quote(m.Method)})
	}
}

// notification hands a notification to its typed callback, if any, then
// to ClientOptions.OnNotification; notifications/cancelled cancels the
// server's request it names.
func (r *clientReader) notification(m *jsonrpc.Message) {
	r.mod.acknowledged(m)    // subscriptions/listen acknowledgements (client_rev2026_listen.go)
	r.featureNotification(m) // tasks, resources and list_changed (client_features.go)
	switch m.Method {
	case notificationCancelled:
		var p cancelledParams
		if m.Params != nil && jsonv2.Unmarshal(m.Params, &p) == nil && p.RequestID != nil {
			r.side.reqs.cancel(idKey(p.RequestID), p.Reason)
		}
	case notificationMessage:
		if r.opts.OnLog != nil {
			var p LoggingMessageNotificationParams
			if m.Params == nil || jsonv2.Unmarshal(m.Params, &p) != nil {
				r.log.Warn("mcp: client received a malformed notifications/message")
				break
			}
			r.opts.OnLog(&p)
		}
	case notificationProgress:
		if r.opts.OnProgress != nil {
			var p ProgressParams
			if m.Params == nil || jsonv2.Unmarshal(m.Params, &p) != nil {
				r.log.Warn("mcp: client received a malformed notifications/progress")
				break
			}
			r.opts.OnProgress(&p)
		}
	}
	if r.opts.OnNotification != nil {
		r.opts.OnNotification(m.Method, json.RawMessage(m.Params))
	}
}
