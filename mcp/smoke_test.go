package mcp_test

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

type echoSource struct{}

func (echoSource) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "echo", InputSchema: jsontext.Value(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)}}, nil
}

func (echoSource) CallTool(_ context.Context, c *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if c.Name != "echo" {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "unknown tool", Data: &mcp.StructuredError{Code: mcp.ErrNotFound, Message: "no such tool"}}
	}
	var in struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(c.Arguments, &in); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, err.Error(), nil)
	}
	return mcp.TextResult(in.Message), nil
}

func TestSmokeClientServer(t *testing.T) {
	ctx := context.Background()
	ct, st := transport.NewPipe(nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "smoke", Tools: echoSource{}})
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	c := mcp.NewClient(nil)
	require.NoError(t, c.Connect(ctx, ct))
	require.Equal(t, mcp.LatestVersion, c.ProtocolVersion())
	require.NoError(t, c.Ping(ctx))
	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hi"})
	require.NoError(t, err)
	require.Equal(t, "hi", res.Content[0].Text)
	_, err = c.CallTool(ctx, "nope", nil)
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr)
	require.EqualValues(t, mcp.CodeInvalidParams, rpcErr.Code)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	require.Equal(t, mcp.ErrNotFound, se.Code)
	require.NotEmpty(t, se.CorrelationID)
	require.NoError(t, c.Close())
	require.NoError(t, <-done)
}
