package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The client's side of server-to-client requests (sampling, elicitation,
// roots). Requests from the server each run on their own goroutine, so a
// slow handler never holds up the client's reading (client_reader.go);
// their context ends when the server cancels the request
// (notifications/cancelled) or the client closes, and a cancelled request
// is not answered.

// CodeUserRejected is the error code a client answers sampling with when
// the user rejected the request (return &Error{Code: CodeUserRejected, ...}
// from ClientOptions.OnSampling).
const CodeUserRejected = -1

// clientSide is the Client's side of server-to-client requests: it serves
// those a legacy server sends, answers the input requests of a modern one
// (client_rev2026.go) with the same handlers, and holds the roots it exposes.
type clientSide struct {
	opts *ClientOptions // the Client's, read-only: its handlers
	log  *slog.Logger

	once     sync.Once
	base     context.Context // ends when the connection ends
	mu       sync.Mutex
	rootsSet bool // roots replaces ClientOptions.Roots (SetRoots was called)
	roots    []Root
	reqs     requestTable // the server's requests being served (request_table.go)
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

// clientRequestHandler decodes params and serves one server request.
type clientRequestHandler func(s *clientSide, ctx context.Context, params jsontext.Value) (any, error)

// clientRequestHandlers serve the server's requests; each reports ok=false
// when the client has no handler (the request then gets -32601).
var clientRequestHandlers = map[string]func(s *clientSide) (clientRequestHandler, bool){
	methodSamplingCreateMessage: func(s *clientSide) (clientRequestHandler, bool) {
		if s.opts.OnSampling == nil {
			return nil, false
		}
		return func(s *clientSide, ctx context.Context, raw jsontext.Value) (any, error) {
			var p CreateMessageParams
			if err := decodeParams(raw, &p); err != nil {
				return nil, err
			}
			res, err := s.opts.OnSampling(ctx, &p)
			if err == nil && res == nil {
				err = errors.New("OnSampling returned no result")
			}
			return res, err
		}, true
	},
	methodElicitationCreate: func(s *clientSide) (clientRequestHandler, bool) {
		if s.opts.OnElicitation == nil {
			return nil, false
		}
		return func(s *clientSide, ctx context.Context, raw jsontext.Value) (any, error) {
			var p ElicitParams
			if err := decodeParams(raw, &p); err != nil {
				return nil, err
			}
			res, err := s.opts.OnElicitation(ctx, &p)
			if err == nil && res == nil {
				err = errors.New("OnElicitation returned no result")
			}
			return res, err
		}, true
	},
	methodRootsList: func(s *clientSide) (clientRequestHandler, bool) {
		if s.opts.Capabilities.Roots == nil {
			return nil, false
		}
		return func(s *clientSide, ctx context.Context, _ jsontext.Value) (any, error) {
			if s.opts.OnListRoots != nil {
				roots, err := s.opts.OnListRoots(ctx)
				if err != nil {
					return nil, err
				}
				return &ListRootsResult{Roots: roots}, nil
			}
			return &ListRootsResult{Roots: s.currentRoots()}, nil
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

// serve starts serving a request of the server, read from cn, on its own
// goroutine; it reports false when the client has no handler for it.
func (s *clientSide) serve(cn *conn, m *jsonrpc.Message) bool {
	mk := clientRequestHandlers[m.Method]
	if mk == nil {
		return false
	}
	h, ok := mk(s)
	if !ok {
		return false
	}
	s.once.Do(func() {
		base, cancel := context.WithCancel(context.Background())
		s.base = base
		done := cn.doneChan()
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
			_ = cn.writeError(wctx, id, rpcErr)
			return
		}
		if werr := cn.writeResult(wctx, id, res); werr == errNotSerializable {
			_ = cn.writeError(wctx, id, &Error{Code: CodeInternalError, Message: "Internal error: result not serializable"})
		}
	})
	if f == nil {
		_ = cn.writeError(context.Background(), m.ID, errIDInUse)
		return true
	}
	params := m.Params
	serve := func(ctx context.Context, params jsontext.Value) (any, error) { return h(s, ctx, params) }
	go f.run(func(ctx context.Context) (any, error) { return s.serveThrough(ctx, method, params, serve) })
	return true
}

// answer runs the client's handler of an input request of a modern server
// (the same one that answers a legacy server's request of that method).
func (s *clientSide) answer(ctx context.Context, method string, params jsontext.Value) (res any, err error) {
	mk := clientRequestHandlers[method]
	if mk == nil {
		return nil, fmt.Errorf("the client cannot answer method %q", method)
	}
	h, ok := mk(s)
	if !ok {
		return nil, fmt.Errorf("the client has no handler for %s (see ClientOptions: %s)", method, inputHandlerOption[method])
	}
	if params == nil && method == methodRootsList {
		params = jsontext.Value("{}")
	}
	serve := func(ctx context.Context, params jsontext.Value) (any, error) { return h(s, ctx, params) }
	res, err = guard(s.log, "client handler", method, func() (any, error) { return s.serveThrough(ctx, method, params, serve) })
	var p *errPanic
	if errors.As(err, &p) {
		return nil, fmt.Errorf("the handler of %s panicked", method)
	}
	return res, err
}

// inputHandlerOption names the ClientOptions field that answers each input method.
var inputHandlerOption = map[string]string{
	methodSamplingCreateMessage: "OnSampling",
	methodElicitationCreate:     "OnElicitation",
	methodRootsList:             "Roots or OnListRoots",
}

// currentRoots returns the roots the client exposes.
func (s *clientSide) currentRoots() []Root {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rootsSet {
		return slices.Clone(s.roots)
	}
	return slices.Clone(s.opts.Roots)
}

// setRoots replaces the roots the client exposes.
func (s *clientSide) setRoots(roots []Root) {
	s.mu.Lock()
	s.roots, s.rootsSet = slices.Clone(roots), true
	s.mu.Unlock()
}

// Roots returns the roots the client exposes (ClientOptions.Roots, or what
// SetRoots set last).
func (c *Client) Roots() []Root { return c.side.currentRoots() }

// SetRoots replaces the roots the client exposes and, when connected to a
// 2025 session, tells the server with notifications/roots/list_changed (if
// the client declared roots with listChanged; a 2026-07-28 client tells
// nothing, the server asks for roots with each request that needs them).
// It returns a *CapabilityError when the client did not declare roots at
// all (see ClientOptions.Roots).
func (c *Client) SetRoots(ctx context.Context, roots []Root) error {
	if c.opts.Capabilities.Roots == nil {
		return &CapabilityError{Method: rootsChangedMethod, Capability: "roots", Revision: c.ProtocolVersion()}
	}
	if roots == nil {
		roots = []Root{}
	}
	c.side.setRoots(roots)
	return notifyRootsChanged(ctx, c) // rev2025_client_session.go
}
