package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// serve runs reg on an in-memory server and returns a connected client;
// both end with the test.
func serve(t *testing.T, reg *registry.Registry) *mcp.Client {
	t.Helper()
	clientEnd, serverEnd := transport.NewPipe(nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Logger: discardLogger()})
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), serverEnd) }()
	cl := mcp.NewClient(nil)
	require.NoError(t, cl.Connect(context.Background(), clientEnd))
	t.Cleanup(func() {
		require.NoError(t, cl.Close())
		require.NoError(t, <-done)
	})
	return cl
}

// echoAgent answers with what it got and counts its calls in its state.
func echoAgent(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
	switch msg.Type {
	case "fail":
		return nil, errors.New("cannot do that")
	case "deny":
		return nil, mcp.NewToolError(mcp.ErrUnauthorized, "no", nil)
	}
	var n float64
	if _, err := ac.State.Decode("calls", &n); err != nil {
		return nil, err
	}
	if err := ac.State.Set("calls", n+1); err != nil {
		return nil, err
	}
	var in any
	if err := msg.DecodePayload(&in); err != nil {
		return nil, err
	}
	return map[string]any{"type": msg.Type, "input": in, "session": msg.Meta[agents.MetaSessionID], "source": msg.SourceAgentID}, nil
}

func newToolsFixture(t *testing.T, opts *agents.ToolsOptions) (*agents.Coordinator, *mcp.Client) {
	t.Helper()
	noLeaks(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	c := agents.NewCoordinator(&agents.Options{Now: func() time.Time { return now }})
	shutdown(t, c)
	require.NoError(t, c.Register("echo", echoAgent, &agents.AgentInfo{
		Name: "Echo", Description: "Echoes its input", Team: "core", Version: "1.0",
		Capabilities: []string{"echo", "count"}, Tags: []string{"demo"},
	}))
	require.NoError(t, c.Register("off", echoAgent, &agents.AgentInfo{Description: "Disabled", Disabled: true}))
	require.NoError(t, c.Register("plain", echoAgent, nil))
	reg := registry.New(nil)
	require.NoError(t, agents.RegisterTools(reg, c, opts))
	def, h := agents.AgentProxyTool(c)
	def.Name = "ask_agent"
	require.NoError(t, reg.AddTool(def, h, nil))
	return c, serve(t, reg)
}

func TestToolsList(t *testing.T) {
	_, cl := newToolsFixture(t, nil)
	ctx := context.Background()

	tools, err := cl.ListAllTools(ctx)
	require.NoError(t, err)
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name
	}
	require.Equal(t, []string{"agent_get", "agent_list", "agent_run", "ask_agent"}, names)
	require.Equal(t, agents.AgentProxySchema, string(tools[3].InputSchema), "the canonical agentProxy schema, byte for byte")

	list := func(args any) agents.AgentListOutput {
		t.Helper()
		res, err := cl.CallTool(ctx, agents.ToolAgentList, args)
		require.NoError(t, err)
		out, err := mcp.DecodeStructured[agents.AgentListOutput](res)
		require.NoError(t, err)
		return out
	}
	ids := func(out agents.AgentListOutput) []string {
		var s []string
		for _, a := range out.Agents {
			s = append(s, a.AgentID)
		}
		return s
	}
	all := list(nil)
	require.Equal(t, []string{"echo", "off", "plain"}, ids(all))
	require.Equal(t, 3, all.Total)
	require.Equal(t, agents.AgentSummary{
		AgentID: "echo", Name: "Echo", Description: "Echoes its input", Team: "core", Enabled: true,
		Capabilities: []string{"echo", "count"}, QueueLength: 0,
	}, all.Agents[0])
	require.Equal(t, []string{}, all.Agents[2].Capabilities)

	tests := []struct {
		args  map[string]any
		want  []string
		total int
	}{
		{map[string]any{"enabled": true}, []string{"echo", "plain"}, 2},
		{map[string]any{"enabled": false}, []string{"off"}, 1},
		{map[string]any{"team": "core"}, []string{"echo"}, 1},
		{map[string]any{"capability": "count"}, []string{"echo"}, 1},
		{map[string]any{"limit": 1}, []string{"echo"}, 3},
	}
	for _, tt := range tests {
		out := list(tt.args)
		assert.Equal(t, tt.want, ids(out), "%v", tt.args)
		assert.Equal(t, tt.total, out.Total, "%v", tt.args)
	}

	_, err = cl.CallTool(ctx, agents.ToolAgentList, map[string]any{"limit": 0})
	require.Equal(t, mcp.ErrInvalidArgument, structured(t, err).Code)
}

func TestToolsRunAndGet(t *testing.T) {
	c, cl := newToolsFixture(t, &agents.ToolsOptions{ExposeState: true})
	ctx := context.Background()

	res, err := cl.CallTool(ctx, agents.ToolAgentRun, map[string]any{"agentId": "echo", "input": map[string]any{"q": "hi"}, "sessionId": "s1"})
	require.NoError(t, err)
	out, err := mcp.DecodeStructured[agents.AgentRunOutput](res)
	require.NoError(t, err)
	require.True(t, out.Success)
	require.Equal(t, "echo", out.AgentID)
	require.Equal(t, "s1", out.SessionID)
	require.Equal(t, map[string]any{"type": "run", "input": map[string]any{"q": "hi"}, "session": "s1", "source": ""}, out.Output)
	require.Zero(t, out.DurationMs, "fixed clock")

	res, err = cl.CallTool(ctx, agents.ToolAgentRun, map[string]any{"agentId": "echo", "type": "custom"})
	require.NoError(t, err)
	out, err = mcp.DecodeStructured[agents.AgentRunOutput](res)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"type": "custom", "input": nil, "session": "", "source": ""}, out.Output)

	res, err = cl.CallTool(ctx, agents.ToolAgentGet, map[string]any{"agentId": "echo"})
	require.NoError(t, err)
	d, err := mcp.DecodeStructured[agents.AgentDetails](res)
	require.NoError(t, err)
	require.Equal(t, agents.AgentDetails{
		AgentID: "echo", Name: "Echo", Description: "Echoes its input", Team: "core", Version: "1.0", Enabled: true,
		Capabilities: []string{"echo", "count"}, Tags: []string{"demo"},
		Processed: 2, StateBytes: len(`{"calls":2}`), StateKeys: 1, MaxStateBytes: agents.DefaultMaxStateBytes,
		RegisteredAt: "2025-06-01T12:00:00Z", LastActivity: "2025-06-01T12:00:00Z",
		State: map[string]any{"calls": 2.0},
	}, d)
	st, _ := c.State("echo")
	require.Equal(t, map[string]any{"calls": 2.0}, st)
}

func TestToolsErrors(t *testing.T) {
	_, cl := newToolsFixture(t, nil)
	ctx := context.Background()
	tests := []struct {
		name   string
		tool   string
		args   map[string]any
		code   mcp.ErrorCode
		reason string
	}{
		{"run unknown", agents.ToolAgentRun, map[string]any{"agentId": "nope"}, mcp.ErrNotFound, agents.ReasonAgentNotFound},
		{"get unknown", agents.ToolAgentGet, map[string]any{"agentId": "nope"}, mcp.ErrNotFound, agents.ReasonAgentNotFound},
		{"run disabled", agents.ToolAgentRun, map[string]any{"agentId": "off"}, mcp.ErrUnauthorized, agents.ReasonPermissionDenied},
		{"handler error", agents.ToolAgentRun, map[string]any{"agentId": "echo", "type": "fail"}, mcp.ErrInternal, agents.ReasonStageFailed},
		{"handler StructuredError", agents.ToolAgentRun, map[string]any{"agentId": "echo", "type": "deny"}, mcp.ErrUnauthorized, ""},
		{"input not an object", agents.ToolAgentRun, map[string]any{"agentId": "echo", "input": "x"}, mcp.ErrInvalidArgument, ""},
		{"proxy unknown", "ask_agent", map[string]any{"targetAgentId": "nope", "message": map[string]any{"type": "x"}}, mcp.ErrNotFound, agents.ReasonAgentNotFound},
		{"proxy disabled", "ask_agent", map[string]any{"targetAgentId": "off", "message": map[string]any{"type": "x"}}, mcp.ErrUnauthorized, agents.ReasonPermissionDenied},
		{"proxy no type", "ask_agent", map[string]any{"targetAgentId": "echo", "message": map[string]any{"payload": 1}}, mcp.ErrInvalidArgument, agents.ReasonInvalidMessage},
		{"proxy unknown member", "ask_agent", map[string]any{"targetAgentId": "echo", "message": map[string]any{"type": "x", "Type": "y"}}, mcp.ErrInvalidArgument, agents.ReasonInvalidMessage},
		{"proxy missing message", "ask_agent", map[string]any{"targetAgentId": "echo"}, mcp.ErrInvalidArgument, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cl.CallTool(ctx, tt.tool, tt.args)
			require.NotNil(t, res)
			require.True(t, res.IsError)
			se := structured(t, err)
			assert.Equal(t, tt.code, se.Code, se.Message)
			if tt.reason != "" {
				assert.Equal(t, tt.reason, se.Details["reason"], se.Message)
			}
			assert.NotEmpty(t, se.CorrelationID)
		})
	}
}

func TestAgentProxy(t *testing.T) {
	_, cl := newToolsFixture(t, nil)
	res, err := cl.CallTool(context.Background(), "ask_agent", map[string]any{
		"targetAgentId": "echo",
		"message":       map[string]any{"type": "ask", "payload": map[string]any{"q": 1}, "sourceAgentId": "planner", "meta": map[string]any{"sessionId": "s9"}},
	})
	require.NoError(t, err)
	want := `{"response":{"input":{"q":1},"session":"s9","source":"planner","type":"ask"},"targetAgentId":"echo"}`
	require.JSONEq(t, want, string(res.StructuredContent))
	require.Len(t, res.Content, 1)
	require.JSONEq(t, want, res.Content[0].Text)
	var out agents.AgentProxyResult
	require.NoError(t, jsonv2.Unmarshal(res.StructuredContent, &out))
	require.Equal(t, "echo", out.TargetAgentID)
}

// The proxy handler works directly (outside a server) too, and its
// definition is the caller's to rename.
func TestAgentProxyDefinition(t *testing.T) {
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	def, h := agents.AgentProxyTool(c)
	require.Equal(t, agents.DefaultAgentProxyName, def.Name)
	require.Equal(t, agents.AgentProxySchema, string(def.InputSchema))
	def2, _ := agents.AgentProxyTool(c)
	def.InputSchema[0] = ' '
	require.Equal(t, agents.AgentProxySchema, string(def2.InputSchema), "each call returns its own definition")
	_, err := h(context.Background(), &mcp.ToolCall{}, json.RawMessage(`{"targetAgentId":"","message":{"type":"x"}}`))
	require.Equal(t, mcp.ErrInvalidArgument, structured(t, err).Code)
}
