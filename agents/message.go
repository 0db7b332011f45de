package agents

import (
	"context"
	"encoding/json"
	"log/slog"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Message is what Send delivers to an agent: a type, a payload, the
// sending agent and metadata.
type Message struct {
	// Type says what the message asks for; handlers switch on it.
	Type string `json:"type"`
	// Payload is the message's data: any Go value from an in-process
	// sender, a json.RawMessage (raw JSON) from the MCP tools. It is passed to
	// the handler as is, by reference: handlers must treat it as read-only.
	// DecodePayload reads either form into a Go value.
	Payload any `json:"payload,omitzero"`
	// SourceAgentID is the sending agent, if any.
	SourceAgentID string `json:"sourceAgentId,omitempty"`
	// Meta carries metadata outside the payload (agent_run puts the
	// sessionId here; reliable-messaging layers their envelope ids).
	Meta map[string]string `json:"meta,omitempty"`
}

// DecodePayload decodes the payload into v (a pointer), whatever its form: a
// json.RawMessage is decoded directly, any other value is converted through
// its JSON encoding. A nil payload leaves v unchanged.
func (m Message) DecodePayload(v any) error {
	switch p := m.Payload.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return jsonv2.Unmarshal(p, v)
	case jsontext.Value:
		return jsonv2.Unmarshal(p, v)
	default:
		b, err := jsonv2.Marshal(p)
		if err != nil {
			return err
		}
		return jsonv2.Unmarshal(b, v)
	}
}

// Handler processes one message for one agent and returns the response that
// Send returns to the caller. The Coordinator calls an agent's handler for
// one message at a time, in the order the messages were queued.
//
// ctx carries the values of the sender's context and is cancelled when the
// sender stops waiting, when the agent is unregistered and when a Shutdown
// rejects or times out. Changes made through ac.State are committed when the
// handler returns a nil error (and the state stays within MaxStateBytes);
// when it returns an error or panics they are discarded.
type Handler func(ctx context.Context, msg Message, ac *AgentContext) (any, error)

// AgentContext is what a handler knows about the agent it runs for. It is
// valid only until the handler returns.
type AgentContext struct {
	// AgentID is the id the agent is registered under.
	AgentID string
	// State is the agent's state, with this message's uncommitted changes.
	State *State
	// Logger logs with the attribute agent=AgentID.
	Logger *slog.Logger
	// Coordinator is the coordinator running the agent, for messages to
	// other agents. Send to an agent up the delegation chain (including the
	// agent itself) with the handler's ctx fails with ErrDelegationCycle
	// instead of waiting forever.
	Coordinator *Coordinator
}

// Middleware wraps agent handlers: Coordinator.Use applies it to the handler
// of every agent, registered or not yet. It runs on the agent's goroutine,
// inside the agent's one-message-at-a-time section, so it may keep per-agent
// bookkeeping (receiver-side deduplication, for example) without locks
// beyond its own. The first middleware given is the outermost.
type Middleware func(next Handler) Handler

// Sender sends a message to an agent and waits for its response. Coordinator
// implements it; layers that add delivery guarantees (package aacp) accept
// and wrap a Sender, and tests substitute one to drop, duplicate or reorder
// deliveries.
type Sender interface {
	Send(ctx context.Context, targetID string, msg Message) (any, error)
}

var _ Sender = (*Coordinator)(nil)

// delegation is one link of the chain of agents whose handlers are running
// in a context: the innermost agent first.
type delegation struct {
	agentID string
	parent  *delegation
	depth   int
}

type delegationKey struct{}

func delegationFrom(ctx context.Context) *delegation {
	d, _ := ctx.Value(delegationKey{}).(*delegation)
	return d
}

func (d *delegation) contains(id string) bool {
	for ; d != nil; d = d.parent {
		if d.agentID == id {
			return true
		}
	}
	return false
}

func (d *delegation) ids() []string {
	var ids []string
	for ; d != nil; d = d.parent {
		ids = append(ids, d.agentID)
	}
	// outermost first
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	return ids
}

// CurrentAgent returns the id of the agent whose handler runs with ctx (or
// a context derived from it), and false outside handlers. Layers built on
// the coordinator use it as the source of messages a handler sends.
func CurrentAgent(ctx context.Context) (string, bool) {
	if d := delegationFrom(ctx); d != nil {
		return d.agentID, true
	}
	return "", false
}

// DelegationChain returns the agents whose handlers are waiting on each
// other in ctx, outermost first, ending with CurrentAgent (nil outside
// handlers).
func DelegationChain(ctx context.Context) []string {
	return delegationFrom(ctx).ids()
}
