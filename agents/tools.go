package agents

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Names of the tools RegisterTools registers.
const (
	ToolAgentList = "agent_list"
	ToolAgentGet  = "agent_get"
	ToolAgentRun  = "agent_run"
)

// DefaultListLimit is agent_list's default limit.
const DefaultListLimit = 50

// MaxListLimit is the largest limit agent_list accepts.
const MaxListLimit = 1000

// RunMessageType is the message type agent_run sends when its input names
// none.
const RunMessageType = "run"

// MetaSessionID is the Message.Meta key under which agent_run passes its
// sessionId to the handler.
const MetaSessionID = "sessionId"

// ToolsOptions configures RegisterTools. A nil *ToolsOptions means the
// defaults.
type ToolsOptions struct {
	// RunTimeout is agent_run's deadline (registry.ToolOptions.Timeout; 0 =
	// the call chain's default).
	RunTimeout time.Duration
	// Module is published as the tools' module (registry.ToolOptions.Module).
	Module string
	// ExposeState makes agent_get return the agent's state. Off by default:
	// state may hold what clients should not see.
	ExposeState bool
}

// AgentListInput is agent_list's input.
type AgentListInput struct {
	Team       string `json:"team,omitempty" jsonschema:"description=Only agents of this team"`
	Enabled    *bool  `json:"enabled,omitempty" jsonschema:"description=Only enabled (true) or disabled (false) agents"`
	Capability string `json:"capability,omitempty" jsonschema:"description=Only agents with this capability"`
	Limit      int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000,default=50,description=Maximum number of agents to return (default 50)"`
}

// AgentSummary is one agent in agent_list's result.
type AgentSummary struct {
	AgentID      string   `json:"agentId"`
	Name         string   `json:"name,omitempty"`
	Description  string   `json:"description"`
	Team         string   `json:"team,omitempty"`
	Enabled      bool     `json:"enabled"`
	Capabilities []string `json:"capabilities"`
	QueueLength  int      `json:"queueLength" jsonschema:"minimum=0"`
}

// AgentListOutput is agent_list's result: the matching agents sorted by id,
// at most limit of them, and how many matched in all.
type AgentListOutput struct {
	Agents []AgentSummary `json:"agents"`
	Total  int            `json:"total" jsonschema:"minimum=0"`
}

// AgentGetInput is agent_get's input.
type AgentGetInput struct {
	AgentID string `json:"agentId" jsonschema:"minLength=1,description=The ID of the agent"`
}

// AgentDetails is agent_get's result. Timestamps are RFC 3339 in UTC;
// lastActivity is absent until the handler first returned, state unless
// ToolsOptions.ExposeState.
type AgentDetails struct {
	AgentID       string         `json:"agentId"`
	Name          string         `json:"name,omitempty"`
	Description   string         `json:"description"`
	Team          string         `json:"team,omitempty"`
	Version       string         `json:"version,omitempty"`
	Enabled       bool           `json:"enabled"`
	Capabilities  []string       `json:"capabilities"`
	Tags          []string       `json:"tags"`
	QueueLength   int            `json:"queueLength" jsonschema:"minimum=0"`
	Busy          bool           `json:"busy"`
	Processed     uint64         `json:"processed"`
	Failed        uint64         `json:"failed"`
	StateBytes    int            `json:"stateBytes" jsonschema:"minimum=0"`
	StateKeys     int            `json:"stateKeys" jsonschema:"minimum=0"`
	MaxStateBytes int            `json:"maxStateBytes" jsonschema:"minimum=0"`
	RegisteredAt  string         `json:"registeredAt"`
	LastActivity  string         `json:"lastActivity,omitempty"`
	State         map[string]any `json:"state,omitempty"`
}

// AgentRunInput is agent_run's input.
type AgentRunInput struct {
	AgentID   string          `json:"agentId" jsonschema:"minLength=1,description=The ID of the agent to run"`
	Input     json.RawMessage `json:"input,omitzero" jsonschema:"type=object,description=Input data for the agent (the message payload)"`
	Type      string          `json:"type,omitempty" jsonschema:"description=Message type (default run)"`
	SessionID string          `json:"sessionId,omitempty" jsonschema:"description=Optional session ID to associate with execution"`
}

// AgentRunOutput is agent_run's result. durationMs is the handler's run
// time, totalDurationMs includes the wait in the agent's queue.
type AgentRunOutput struct {
	Success         bool   `json:"success"`
	AgentID         string `json:"agentId"`
	SessionID       string `json:"sessionId,omitempty"`
	Output          any    `json:"output"`
	DurationMs      int64  `json:"durationMs" jsonschema:"minimum=0"`
	TotalDurationMs int64  `json:"totalDurationMs" jsonschema:"minimum=0"`
}

// RegisterTools registers agent_list, agent_get and agent_run for the
// agents of c in reg.
//
// Failures are isError results carrying a StructuredError: an unknown agent
// is NOT_FOUND with details.reason AGENT_NOT_FOUND, a disabled one
// UNAUTHORIZED with AGENT_PERMISSION_DENIED, a full queue or a state over
// maxStateBytes RESOURCE_EXHAUSTED. A handler error that is (or wraps) a
// *mcp.StructuredError keeps its code; any other becomes INTERNAL with
// reason AGENT_STAGE_FAILED.
func RegisterTools(reg *registry.Registry, c *Coordinator, opts *ToolsOptions) error {
	var o ToolsOptions
	if opts != nil {
		o = *opts
	}
	err := registry.Register(reg, ToolAgentList, "Lists the registered agents, sorted by ID, optionally filtered by team, enabled status or capability.",
		func(ctx context.Context, in AgentListInput) (AgentListOutput, error) { return listAgents(c, in), nil },
		&registry.ToolOptions{Title: "List agents", ReadOnly: true, Module: o.Module})
	if err != nil {
		return err
	}
	err = registry.Register(reg, ToolAgentGet, "Returns an agent's description and activity: queue length, processed and failed messages, state size, last activity.",
		func(ctx context.Context, in AgentGetInput) (AgentDetails, error) {
			return getAgent(c, in, o.ExposeState)
		},
		&registry.ToolOptions{Title: "Get agent", ReadOnly: true, Module: o.Module})
	if err != nil {
		return err
	}
	return registry.Register(reg, ToolAgentRun, "Runs an agent: sends it a message whose payload is input and returns its output.",
		func(ctx context.Context, in AgentRunInput) (AgentRunOutput, error) { return runAgent(ctx, c, in) },
		&registry.ToolOptions{Title: "Run agent", Module: o.Module, Timeout: o.RunTimeout})
}

func listAgents(c *Coordinator, in AgentListInput) AgentListOutput {
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	out := AgentListOutput{Agents: []AgentSummary{}}
	for _, st := range c.Agents() {
		switch {
		case in.Team != "" && st.Info.Team != in.Team,
			in.Enabled != nil && *in.Enabled == st.Info.Disabled,
			in.Capability != "" && !slices.Contains(st.Info.Capabilities, in.Capability):
			continue
		}
		out.Total++
		if len(out.Agents) < limit {
			out.Agents = append(out.Agents, AgentSummary{
				AgentID:      st.ID,
				Name:         st.Info.Name,
				Description:  st.Info.Description,
				Team:         st.Info.Team,
				Enabled:      !st.Info.Disabled,
				Capabilities: nonNil(st.Info.Capabilities),
				QueueLength:  st.QueueLength,
			})
		}
	}
	return out
}

func getAgent(c *Coordinator, in AgentGetInput, exposeState bool) (AgentDetails, error) {
	st, ok := c.Agent(in.AgentID)
	if !ok {
		return AgentDetails{}, errNotFound(in.AgentID).StructuredError()
	}
	d := AgentDetails{
		AgentID:       st.ID,
		Name:          st.Info.Name,
		Description:   st.Info.Description,
		Team:          st.Info.Team,
		Version:       st.Info.Version,
		Enabled:       !st.Info.Disabled,
		Capabilities:  nonNil(st.Info.Capabilities),
		Tags:          nonNil(st.Info.Tags),
		QueueLength:   st.QueueLength,
		Busy:          st.Busy,
		Processed:     st.Processed,
		Failed:        st.Failed,
		StateBytes:    st.StateBytes,
		StateKeys:     st.StateKeys,
		MaxStateBytes: c.MaxStateBytes(),
		RegisteredAt:  timestamp(st.RegisteredAt),
		LastActivity:  timestamp(st.LastActivity),
	}
	if exposeState {
		d.State, _ = c.State(in.AgentID)
	}
	return d, nil
}

func runAgent(ctx context.Context, c *Coordinator, in AgentRunInput) (AgentRunOutput, error) {
	msg := Message{Type: in.Type}
	if msg.Type == "" {
		msg.Type = RunMessageType
	}
	if in.Input != nil { // a nil jsontext.Value would be a non-nil payload
		msg.Payload = in.Input
	}
	if in.SessionID != "" {
		msg.Meta = map[string]string{MetaSessionID: in.SessionID}
	}
	e, err := c.send(ctx, in.AgentID, msg)
	if err == nil {
		err = e.err
	}
	if err != nil {
		return AgentRunOutput{}, toolError(in.AgentID, err)
	}
	return AgentRunOutput{
		Success:         true,
		AgentID:         in.AgentID,
		SessionID:       in.SessionID,
		Output:          e.res,
		DurationMs:      max(e.finished.Sub(e.started).Milliseconds(), 0),
		TotalDurationMs: max(e.finished.Sub(e.queued).Milliseconds(), 0),
	}, nil
}

// toolError turns an error of Send into what a tool handler returns: the
// StructuredError of an *Error, a handler's StructuredError or *mcp.Error
// unchanged, TIMEOUT for a passed deadline, and INTERNAL with reason
// AGENT_STAGE_FAILED for anything else.
func toolError(agentID string, err error) error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.StructuredError()
	}
	var se *mcp.StructuredError
	var rpc *mcp.Error
	if errors.As(err, &se) || errors.As(err, &rpc) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return mcp.NewToolError(mcp.ErrTimeout, "agent "+quote(agentID)+" did not answer in time",
			map[string]any{reasonKey: ReasonCancelled, agentIDKey: agentID})
	}
	return mcp.NewToolError(mcp.ErrInternal, "agent "+quote(agentID)+" failed: "+err.Error(),
		map[string]any{reasonKey: ReasonStageFailed, agentIDKey: agentID})
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
