package aacp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/keelmcp/keel/mcp"
)

// Handler processes the REQUESTs and EVENTs addressed to one agent. Its
// result (any JSON-encodable value; a json.RawMessage is used as is) becomes
// the RESPONSE payload's result; an error fails the attempt (see
// RetryPolicy). Handlers must be idempotent: after a crash, a request that
// had not been recorded as resolved runs again: handlers must be
// idempotent. A request recorded COMPLETED or FAILED never runs again.
type Handler interface {
	ServeAACP(ctx context.Context, env *Envelope) (any, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, env *Envelope) (any, error)

// ServeAACP calls f.
func (f HandlerFunc) ServeAACP(ctx context.Context, env *Envelope) (any, error) { return f(ctx, env) }

// DoneFunc receives the outcome of one dispatched message: the handler's
// result or error.
type DoneFunc func(result any, err error)

// Endpoint hosts agents for a Node: it says which agents live in this
// process and hands messages to them. Mux is the simple Endpoint;
// NewCoordinator adapts an agents.Coordinator.
type Endpoint interface {
	// Hosts reports whether the agent lives here.
	Hosts(agentID string) bool
	// Agents returns the ids of the agents that live here.
	Agents() []string
	// Dispatch hands a REQUEST or EVENT to its target's handler. When it
	// returns nil, the message was accepted and done is called exactly once,
	// from any goroutine, before or after Dispatch returns. When it returns
	// an error, the handler never saw the message and done is never called:
	// the Node delivers the message again later, unless the error matches
	// ErrUndeliverable (then the request fails with protocol_error).
	//
	// Dispatch may run the handler on the calling goroutine and return once
	// it finished, or when ctx ends; it must not block for long otherwise.
	Dispatch(ctx context.Context, env *Envelope, done DoneFunc) error
}

// ErrUndeliverable is matched by Dispatch errors for messages that can
// never be delivered (the request fails at once with protocol_error).
var ErrUndeliverable = errors.New("aacp: message cannot be delivered")

// ErrNoHandler is the error of Mux.Dispatch for an agent it does not host
// (the message is delivered again later, in case the agent appears).
var ErrNoHandler = errors.New("aacp: no handler for agent")

// Mux is an Endpoint that maps agent ids to Handlers and runs each handler
// on the goroutine that dispatches to it: on the caller's goroutine for
// SendRequest, on a background goroutine of the Node for redeliveries,
// EVENTs and retries. Handlers of one agent may therefore run concurrently
// and must be safe for that; use NewCoordinator for agents that process one
// message at a time. A panicking handler fails its attempt with INTERNAL.
type Mux struct {
	mu       sync.RWMutex
	handlers map[string]Handler
	ids      []string
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{handlers: map[string]Handler{}} }

// Handle registers (or replaces) the handler of an agent.
func (m *Mux) Handle(agentID string, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.handlers[agentID]; !ok {
		m.ids = append(slices.Clone(m.ids), agentID)
		slices.Sort(m.ids)
	}
	m.handlers[agentID] = h
}

// HandleFunc registers a function as the handler of an agent.
func (m *Mux) HandleFunc(agentID string, f func(ctx context.Context, env *Envelope) (any, error)) {
	m.Handle(agentID, HandlerFunc(f))
}

// Remove unregisters an agent and reports whether it was registered.
func (m *Mux) Remove(agentID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.handlers[agentID]; !ok {
		return false
	}
	delete(m.handlers, agentID)
	m.ids = slices.DeleteFunc(slices.Clone(m.ids), func(id string) bool { return id == agentID })
	return true
}

// Hosts implements Endpoint.
func (m *Mux) Hosts(agentID string) bool {
	m.mu.RLock()
	_, ok := m.handlers[agentID]
	m.mu.RUnlock()
	return ok
}

// Agents implements Endpoint; the result is sorted and must not be
// modified.
func (m *Mux) Agents() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ids
}

// Dispatch implements Endpoint: it runs the handler at once.
func (m *Mux) Dispatch(ctx context.Context, env *Envelope, done DoneFunc) error {
	m.mu.RLock()
	h := m.handlers[env.TargetAgentID]
	m.mu.RUnlock()
	if h == nil {
		return fmt.Errorf("%w %q", ErrNoHandler, env.TargetAgentID)
	}
	res, err := serve(ctx, h, env)
	done(res, err)
	return nil
}

func serve(ctx context.Context, h Handler, env *Envelope) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &mcp.StructuredError{Code: mcp.ErrInternal, Message: fmt.Sprintf("handler panicked: %v", p)}
		}
	}()
	return h.ServeAACP(ctx, env)
}
