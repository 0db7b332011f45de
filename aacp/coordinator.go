package aacp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
)

// Keys of agents.Message.Meta under which a Coordinator passes the
// envelope of a reliable message to the agent's handler.
const (
	MetaMessageID   = "aacp.messageId"
	MetaRequestID   = "aacp.requestId"
	MetaSeq         = "aacp.seq"
	MetaMessageType = "aacp.messageType"
)

// Coordinator is an agents.Coordinator with reliable messaging, added without
// changing the plain one: SendReliable and SendRequest go through a Node and
// its ledger, while Send, Register, State, Shutdown and the rest are the
// embedded coordinator's, unchanged.
//
// Reliable messages reach the agent's handler as an agents.Message whose
// Type is the message type ("REQUEST" or "EVENT"), whose Payload is the raw
// JSON payload (a json.RawMessage) and whose Meta carries the envelope's ids
// (MetaMessageID, MetaRequestID, MetaSeq). They are processed in the
// agent's queue like any other message, one at a time. The handler's
// result is recorded in the ledger even when it arrives after the caller
// stopped waiting (late_completed).
type Coordinator struct {
	*agents.Coordinator
	node *Node
}

// NewCoordinator adds reliable messaging to c, with store as the ledger. It
// installs a middleware on c (see agents.Coordinator.Use) that records the
// results of reliable messages. Call Start before sending.
func NewCoordinator(c *agents.Coordinator, store Store, opts *Options) *Coordinator {
	ep := &coordinatorEndpoint{c: c}
	c.Use(ep.middleware)
	return &Coordinator{Coordinator: c, node: New(store, ep, opts)}
}

// Node returns the node behind the coordinator (for Await, Status, Poll,
// sessions).
func (c *Coordinator) Node() *Node { return c.node }

// Start recovers pending work from the ledger and starts polling it (see
// Node.Start).
func (c *Coordinator) Start(ctx context.Context) error { return c.node.Start(ctx) }

// Close stops the node (see Node.Close); the agents keep running until
// Shutdown.
func (c *Coordinator) Close(ctx context.Context) error { return c.node.Close(ctx) }

// source is the agent whose handler runs with ctx, or the node itself.
func (c *Coordinator) source(ctx context.Context) string {
	if id, ok := agents.CurrentAgent(ctx); ok {
		return id
	}
	return c.node.id
}

// SendReliable sends payload to targetID as an EVENT delivered until
// acknowledged and processed once, and returns its messageId. The source
// is the agent whose handler calls it (agents.CurrentAgent), otherwise the
// node.
func (c *Coordinator) SendReliable(ctx context.Context, targetID string, payload any, opts ...SendOption) (string, error) {
	return c.node.SendReliable(ctx, c.source(ctx), targetID, payload, opts...)
}

// SendRequest sends payload to targetID as a REQUEST and returns the
// handler's result (see Node.SendRequest: a *FailedError, or an
// *UnknownOutcomeError when ctx ends first).
func (c *Coordinator) SendRequest(ctx context.Context, targetID string, payload any, opts ...SendOption) (json.RawMessage, error) {
	return c.node.SendRequest(ctx, c.source(ctx), targetID, payload, opts...)
}

// coordinatorEndpoint is the Endpoint of a Coordinator: agents.Send, with a
// middleware that catches the handler's result when Send's caller stopped
// waiting.
type coordinatorEndpoint struct{ c *agents.Coordinator }

func (e *coordinatorEndpoint) Hosts(id string) bool { return e.c.Has(id) }

func (e *coordinatorEndpoint) Agents() []string {
	all := e.c.Agents()
	ids := make([]string, len(all))
	for i, a := range all {
		ids[i] = a.ID
	}
	return ids
}

type dispatchKey struct{}

// pendingCall hands the outcome of one dispatch to done exactly once: from
// Send's return when the caller was still waiting (that return includes
// what the coordinator adds after the handler, such as a state that
// exceeds its bound), from the middleware when the caller had stopped
// waiting.
type pendingCall struct {
	done  DoneFunc
	state atomic.Int32 // callPending, callHandled, callAbandoned
	res   any
	err   error
}

const (
	callPending   = iota
	callHandled   // the handler returned; res and err are set
	callAbandoned // Send returned first; the middleware calls done
)

// Dispatch implements Endpoint: agents.Send on the calling goroutine.
func (e *coordinatorEndpoint) Dispatch(ctx context.Context, env *Envelope, done DoneFunc) error {
	pc := &pendingCall{done: done}
	msg := agents.Message{
		Type: string(env.MessageType), Payload: env.Payload, SourceAgentID: env.SourceAgentID,
		Meta: map[string]string{MetaMessageID: env.MessageID, MetaRequestID: env.RequestID,
			MetaSeq: strconv.FormatUint(env.Seq, 10), MetaMessageType: string(env.MessageType)},
	}
	res, err := e.c.Send(context.WithValue(ctx, dispatchKey{}, pc), env.TargetAgentID, msg)
	if err != nil && errors.Is(err, agents.ErrNotDelivered) && pc.state.Load() == callPending {
		if errors.Is(err, agents.ErrDelegationCycle) || errors.Is(err, agents.ErrDelegationDepth) {
			return fmt.Errorf("%w: %w", ErrUndeliverable, err)
		}
		return err // the handler never saw it: deliver again later
	}
	if err != nil && isContextErr(err) && pc.state.CompareAndSwap(callPending, callAbandoned) {
		return nil // the handler runs on; the middleware reports it
	}
	if pc.state.Load() == callHandled && isContextErr(err) && !isContextErr(pc.err) {
		res, err = pc.res, pc.err // Send gave up just as the handler returned
	}
	if errors.Is(err, agents.ErrStateTooLarge) {
		err = Permanent(err) // the same changes would be too large again
	}
	done(res, err)
	return nil
}

// middleware records the handler's outcome for Dispatch and reports it
// itself when Dispatch's caller stopped waiting.
func (e *coordinatorEndpoint) middleware(next agents.Handler) agents.Handler {
	return func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (res any, err error) {
		pc, _ := ctx.Value(dispatchKey{}).(*pendingCall)
		if pc == nil || msg.Meta[MetaRequestID] == "" && msg.Meta[MetaMessageID] == "" {
			return next(ctx, msg, ac)
		}
		returned := false
		defer func() {
			if returned {
				return
			}
			p := recover()
			perr := &mcp.StructuredError{Code: mcp.ErrInternal, Message: fmt.Sprintf("handler of agent %q panicked: %v", ac.AgentID, p)}
			if p == nil {
				perr.Message = fmt.Sprintf("handler of agent %q exited its goroutine", ac.AgentID)
			}
			pc.report(nil, perr)
			if p != nil {
				panic(p)
			}
		}()
		res, err = next(ctx, msg, ac)
		returned = true
		pc.report(res, err)
		return res, err
	}
}

func (pc *pendingCall) report(res any, err error) {
	pc.res, pc.err = res, err
	if !pc.state.CompareAndSwap(callPending, callHandled) {
		pc.done(res, err) // Dispatch returned already
	}
}
