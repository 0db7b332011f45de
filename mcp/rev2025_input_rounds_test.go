//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// The input rounds of a 2025 session run around the handler of every
// method whose row declares them, built-in or custom, alike: the handler
// asks, the server asks the client (elicitation/create) and runs the
// handler again with the answer as its Input. The middleware chain runs
// once around both runs; the tool's own chain runs once per run, and both
// runs of a tool are the same ToolCall (its ids, logger and progress).
func TestInputRoundsRunAroundTheHandler2025(t *testing.T) {
	calls := map[string]func(ctx context.Context, c *mcp.Client) (string, error){
		"tools/call": func(ctx context.Context, c *mcp.Client) (string, error) {
			res, err := c.CallTool(ctx, "ask", map[string]any{"n": 1})
			if err != nil {
				return "", err
			}
			return res.Content[0].Text, nil
		},
		"prompts/get": func(ctx context.Context, c *mcp.Client) (string, error) {
			res, err := c.GetPrompt(ctx, "ask", map[string]string{"n": "1"})
			if err != nil {
				return "", err
			}
			return res.Messages[0].Content.Text, nil
		},
		"resources/read": func(ctx context.Context, c *mcp.Client) (string, error) {
			res, err := c.ReadResource(ctx, "test://ask")
			if err != nil {
				return "", err
			}
			return *res.Contents[0].Text, nil
		},
		roundMethod: func(ctx context.Context, c *mcp.Client) (string, error) {
			var out struct {
				Text string `json:"text"`
			}
			err := c.Call(ctx, roundMethod, map[string]any{"n": 1}, &out)
			return out.Text, err
		},
	}
	for _, tc := range roundCases {
		t.Run(tc.method, func(t *testing.T) {
			s := newRoundSources()
			copts := *quietClient
			asked := 0
			copts.OnElicitation = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				asked++
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Grace"}}, nil
			}
			ct, wait := mcptest.StartServer(t, roundOptions(s), nil)
			c := mcp.NewClient(&copts)
			require.NoError(t, c.Connect(t.Context(), ct))
			t.Cleanup(func() { c.Close(); _ = wait() })

			text, err := calls[tc.method](t.Context(), c)
			require.NoError(t, err)
			assert.Equal(t, "Hello, Grace (state "+tc.method+")", text)
			assert.Equal(t, 1, asked)

			runs, chain, tool := s.snapshot(tc.method)
			require.Len(t, runs, 2)
			assert.False(t, runs[0].input, "the first run has no Input")
			assert.True(t, runs[1].input, "the second run has the client's answer")
			assert.Equal(t, 1, chain, "the middleware chain runs once around the rounds")
			if tc.method != roundMethod {
				require.NotNil(t, runs[0].prog)
				assert.Same(t, runs[0].prog, runs[1].prog, "one Progress for every round")
			}
			if tc.method != "tools/call" {
				return
			}
			assert.Equal(t, 2, tool, "the tool's chain runs once per round")
			require.NotNil(t, runs[0].call)
			assert.Same(t, runs[0].call, runs[1].call, "one ToolCall for every round")
			assert.Equal(t, runs[0].runID, runs[1].runID)
			assert.Equal(t, runs[0].corr, runs[1].corr)
			assert.Same(t, runs[0].logger, runs[1].logger)
		})
	}
}

// oddTools has one tool, "odd", that asks the client for input with a
// method no client serves, and a prompt source of the same.
type oddTools struct{}

var oddInput = map[string]mcp.InputRequest{"x": {Method: "acme/odd"}}

func (oddTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "odd", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (oddTools) CallTool(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
	return nil, mcp.InputRequired(oddInput, nil)
}

func (oddTools) ListPrompts(context.Context) ([]*mcp.Prompt, error) {
	return []*mcp.Prompt{{Name: "odd"}}, nil
}

func (oddTools) GetPrompt(context.Context, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return nil, mcp.InputRequired(oddInput, nil)
}

// An error that ends a 2025 session's input rounds (here: input the
// server cannot ask for) is the method's outcome, mapped as the method
// maps its handler's errors: tools/call answers an isError result with
// the call's ids, prompts/get a JSON-RPC error.
func TestInputRoundsErrorIsTheOutcome2025(t *testing.T) {
	o := mcptest.ServerOptions(oddTools{})
	o.Prompts = oddTools{}
	ct, wait := mcptest.StartServer(t, o, nil)
	c := mcp.NewClient(quietClient)
	require.NoError(t, c.Connect(t.Context(), ct))
	t.Cleanup(func() { c.Close(); _ = wait() })

	var res mcp.CallToolResult
	require.NoError(t, c.Call(t.Context(), "tools/call", map[string]any{"name": "odd", "arguments": map[string]any{}}, &res))
	require.True(t, res.IsError, "a result, not a JSON-RPC error")
	var se mcp.StructuredError
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].Text), &se))
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.NotEmpty(t, se.RunID)
	assert.NotEmpty(t, se.CorrelationID)

	_, err := c.GetPrompt(t.Context(), "odd", nil)
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(mcp.CodeInternalError), e.Code)
}

// BenchmarkServeInputMethods2025 is BenchmarkServeInputMethods2026 on a
// 2025-11-25 session.
func BenchmarkServeInputMethods2025(b *testing.B) { benchInputMethods(b, true) }
