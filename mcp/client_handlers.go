package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The client's side of server-to-client requests (sampling, elicitation,
// roots) and of the notifications it receives (logging, progress,
// cancellation). Requests from the server each run on their own goroutine,
// so a slow handler never holds up the client's reading; their context ends
// when the server cancels the request (notifications/cancelled) or the
// client closes, and a cancelled request is not answered.

// CodeUserRejected is the error code a client answers sampling with when
// the user rejected the request (return &Error{Code: CodeUserRejected, ...}
// from ClientOptions.OnSampling).
const CodeUserRejected = -1

// clientSide is the Client's state for server-to-client requests.
type clientSide struct {
	once     sync.Once
	base     context.Context // ends when the connection ends
	mu       sync.Mutex
	rootsSet bool // roots replaces ClientOptions.Roots (SetRoots was called)
	roots    []Root
	reqs     requestTable // the server's requests being served (request.go)
}

// declareHandlerCapabilities declares the capabilities the handlers in o
// serve, where o.Capabilities does not declare them itself: sampling for
// OnSampling, elicitation (form mode) for OnElicitation, roots with
// listChanged for Roots or OnListRoots.
func declareHandlerCapabilities(o *ClientOptions) {
	c := &o.Capabilities
	if o.OnSampling != nil && c.Sampling == nil {
		c.Sampling = &SamplingCapability{}
	}
	if o.OnElicitation != nil && c.Elicitation == nil {
		c.Elicitation = &ElicitationCapability{}
	}
	if (o.Roots != nil || o.OnListRoots != nil) && c.Roots == nil {
		c.Roots = &RootsCapability{ListChanged: true}
	}
	o.Roots = slices.Clone(o.Roots)
}

func (c *Client) handleNotification(m *jsonrpc.Message) {
	switch m.Method {
	case NotificationCancelled:
		var p CancelledParams
		if m.Params != nil && json.Unmarshal(m.Params, &p) == nil && p.RequestID != nil {
			c.side.reqs.cancel(idKey(p.RequestID), p.Reason)
		}
	case NotificationMessage:
		if c.opts.OnLog != nil {
			var p LoggingMessageNotificationParams
			if m.Params == nil || json.Unmarshal(m.Params, &p) != nil {
				c.log.Warn("mcp: client received a malformed notifications/message")
				break
			}
			c.opts.OnLog(&p)
		}
	case NotificationProgress:
		if c.opts.OnProgress != nil {
			var p ProgressParams
			if m.Params == nil || json.Unmarshal(m.Params, &p) != nil {
				c.log.Warn("mcp: client received a malformed notifications/progress")
				break
			}
			c.opts.OnProgress(&p)
		}
	}
	if c.opts.OnNotification != nil {
		c.opts.OnNotification(m.Method, m.Params)
	}
}

// clientRequestHandler decodes params and serves one server request.
type clientRequestHandler func(c *Client, ctx context.Context, params jsontext.Value) (any, error)

// clientRequestHandlers serve the server's requests; each reports ok=false
// when the client has no handler (the request then gets -32601).
var clientRequestHandlers = map[string]func(c *Client) (clientRequestHandler, bool){
	MethodSamplingCreateMessage: func(c *Client) (clientRequestHandler, bool) {
		if c.opts.OnSampling == nil {
			return nil, false
		}
		return func(c *Client, ctx context.Context, raw jsontext.Value) (any, error) {
			var p CreateMessageParams
			if err := decodeParams(raw, &p); err != nil {
				return nil, err
			}
			res, err := c.opts.OnSampling(ctx, &p)
			if err == nil && res == nil {
				err = errors.New("OnSampling returned no result")
			}
			return res, err
		}, true
	},
	MethodElicitationCreate: func(c *Client) (clientRequestHandler, bool) {
		if c.opts.OnElicitation == nil {
			return nil, false
		}
		return func(c *Client, ctx context.Context, raw jsontext.Value) (any, error) {
			var p ElicitParams
			if err := decodeParams(raw, &p); err != nil {
				return nil, err
			}
			res, err := c.opts.OnElicitation(ctx, &p)
			if err == nil && res == nil {
				err = errors.New("OnElicitation returned no result")
			}
			return res, err
		}, true
	},
	MethodRootsList: func(c *Client) (clientRequestHandler, bool) {
		if c.opts.Capabilities.Roots == nil {
			return nil, false
		}
		return func(c *Client, ctx context.Context, _ jsontext.Value) (any, error) {
			if c.opts.OnListRoots != nil {
				roots, err := c.opts.OnListRoots(ctx)
				if err != nil {
					return nil, err
				}
				return &ListRootsResult{Roots: roots}, nil
			}
			return &ListRootsResult{Roots: c.Roots()}, nil
		}, true
	},
}

func decodeParams(raw jsontext.Value, p any) error {
	if raw == nil {
		return &Error{Code: CodeInvalidParams, Message: "Invalid params: params are required"}
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return invalidParams(err)
	}
	return nil
}

// serveRequest starts serving a request of the server on its own
// goroutine; it reports false when the client has no handler for it.
func (c *Client) serveRequest(m *jsonrpc.Message) bool {
	mk := clientRequestHandlers[m.Method]
	if mk == nil {
		return false
	}
	h, ok := mk(c)
	if !ok {
		return false
	}
	s := &c.side
	s.once.Do(func() {
		base, cancel := context.WithCancel(context.Background())
		s.base = base
		done := c.conn.done
		go func() { <-done; cancel() }()
	})
	id, method := m.ID, m.Method
	f := beginReply(&s.reqs, m, s.base, func(res any, err error) {
		wctx := context.Background()
		var p *errPanic
		if errors.As(err, &p) {
			err = fmt.Errorf("the handler of %s panicked", method)
		}
		if err != nil {
			var rpcErr *Error
			if !errors.As(err, &rpcErr) {
				rpcErr = &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
			}
			_ = c.conn.writeError(wctx, id, rpcErr)
			return
		}
		if werr := c.conn.writeResult(wctx, id, res); werr == errNotSerializable {
			_ = c.conn.writeError(wctx, id, &Error{Code: CodeInternalError, Message: "Internal error: result not serializable"})
		}
	})
	if f == nil {
		_ = c.conn.writeError(context.Background(), m.ID, errIDInUse)
		return true
	}
	params := m.Params
	go f.run(func(ctx context.Context) (any, error) { return h(c, ctx, params) })
	return true
}

// Roots returns the roots the client exposes (ClientOptions.Roots, or what
// SetRoots set last).
func (c *Client) Roots() []Root {
	c.side.mu.Lock()
	defer c.side.mu.Unlock()
	if c.side.rootsSet {
		return slices.Clone(c.side.roots)
	}
	return slices.Clone(c.opts.Roots)
}

// SetRoots replaces the roots the client exposes and, when connected, tells
// the server with notifications/roots/list_changed (if the client declared
// roots with listChanged; a modern client tells nothing, the server asks
// for roots with each request that needs them). It returns a *CapabilityError when the client
// did not declare roots at all (see ClientOptions.Roots).
func (c *Client) SetRoots(ctx context.Context, roots []Root) error {
	rc := c.opts.Capabilities.Roots
	if rc == nil {
		return &CapabilityError{Method: NotificationRootsListChanged, Capability: "roots", Revision: c.ProtocolVersion()}
	}
	if roots == nil {
		roots = []Root{}
	}
	c.side.mu.Lock()
	c.side.roots, c.side.rootsSet = slices.Clone(roots), true
	c.side.mu.Unlock()
	if c.conn == nil || c.init.Load() == nil || !rc.ListChanged || c.mod.on {
		return nil
	}
	return c.Notify(ctx, NotificationRootsListChanged, nil)
}

// SetLoggingLevel asks the server to send log messages of level and more
// severe (logging/setLevel); they arrive at ClientOptions.OnLog. A modern
// client sends its level with each request instead (ClientOptions.LogLevel):
// the error wraps ErrMethodRemoved.
func (c *Client) SetLoggingLevel(ctx context.Context, level LoggingLevel) error {
	if err := c.removed(MethodLoggingSetLevel, "set ClientOptions.LogLevel instead"); err != nil {
		return err
	}
	return c.Call(ctx, MethodLoggingSetLevel, &SetLevelParams{Level: level}, nil)
}
