// Package agents runs in-process agents: named handlers that process
// messages one at a time, each with its own bounded queue and its own
// state, and exposes them to MCP clients as tools.
//
// # Coordinator
//
// A Coordinator holds the agents:
//
//	c := agents.NewCoordinator(nil)
//	err := c.Register("counter", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
//		var n float64
//		if _, err := ac.State.Decode("n", &n); err != nil {
//			return nil, err
//		}
//		n++
//		return n, ac.State.Set("n", n)
//	}, &agents.AgentInfo{Description: "Counts messages"})
//	...
//	n, err := c.Send(ctx, "counter", agents.Message{Type: "inc"})
//
// Concurrency model: messages to one agent are processed strictly in the
// order they were queued, by at most one goroutine at a time; different
// agents run concurrently. An agent's goroutine exists only while it has
// messages: the Send that finds the agent idle starts it, and it ends when
// the queue has been empty for Options.IdleTimeout (10ms by default), when
// the agent is unregistered, or at Shutdown. Each queue is bounded (Options.QueueSize): a Send to
// a full queue fails at once with ErrQueueFull (RESOURCE_EXHAUSTED).
//
// Cancellation: a caller whose context ends stops waiting at once; a message
// it left queued is removed and never processed. A handler's context
// carries the caller's values and is cancelled when the caller stops
// waiting, when the agent is unregistered and when Shutdown rejects.
//
// State: a handler reads and changes its agent's state through
// AgentContext.State, a JSON object whose values are stored encoded, so
// nothing a caller or handler holds is ever shared with it. Changes are
// committed when the handler succeeds and the encoded state stays within
// Options.MaxStateBytes (default 262144 bytes); otherwise they are
// discarded, the previous state is kept, and an oversized state fails the
// message with ErrStateTooLarge (RESOURCE_EXHAUSTED naming maxStateBytes).
// Options.OnStateChange sees a copy of every committed change, and
// Coordinator.State returns a copy of an agent's state.
//
// Shutdown is explicit about queued messages: ShutdownDrain processes them,
// ShutdownReject fails them with ErrShuttingDown. Either way Send and
// Register fail with ErrShuttingDown from then on, and Shutdown waits for
// every agent goroutine to end.
//
// # Errors
//
// Errors of the coordinator are *Error values: errors.Is matches their
// cause (ErrAgentNotFound, ErrQueueFull, ...), errors.As finds a
// *mcp.StructuredError with the code and Details["reason"]
// (AGENT_NOT_FOUND, AGENT_PERMISSION_DENIED, ...), and ErrNotDelivered
// tells the messages whose handler never ran. Errors returned by handlers
// reach Send's caller unchanged.
//
// # Building on the coordinator
//
// Layers that add delivery guarantees (package aacp: reliable messages,
// requests with deduplication) build on three seams and never change Send:
//
//   - Sender, the interface of Send, which they accept and wrap;
//   - Coordinator.Use, middleware around every agent's handler that runs
//     inside the agent's one-at-a-time section (receiver-side dedup,
//     completion and failure events);
//   - the handler's context, which carries the sender's context values
//     (an envelope, for example), with CurrentAgent naming the agent whose
//     handler runs, plus Message.Meta for metadata that must travel with
//     the message.
//
// ErrNotDelivered tells them which failures are safe to retry.
//
// # MCP tools
//
// RegisterTools registers agent_list, agent_get and agent_run in a
// registry.Registry; AgentProxyTool returns the definition (with the
// canonical schema AgentProxySchema) and handler of the agentProxy tool type
// that admin tools register dynamically.
package agents
