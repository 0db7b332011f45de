package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/transport"
)

// TestGreet is the README's downstream unit test: the server over the
// in-memory transport, exercised with keel's Client.
func TestGreet(t *testing.T) {
	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(newRegistry(), nil)})
	go srv.Run(ctx, serverEnd)
	c := mcp.NewClient(nil)
	require.NoError(t, c.Connect(ctx, clientEnd))
	defer c.Close()

	res, err := c.CallTool(ctx, "greet", map[string]any{"name": "Ada"})
	require.NoError(t, err)
	out, err := mcp.DecodeStructured[GreetOutput](res)
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", out.Greeting)
}

func TestHelloErrors(t *testing.T) {
	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(newRegistry(), nil)})
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverEnd) }()
	c := mcp.NewClient(nil)
	require.NoError(t, c.Connect(ctx, clientEnd))

	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	require.Len(t, tools, 2)
	require.Equal(t, "count_words", tools[0].Name, "tools/list is sorted by name")

	// An empty name violates minLength=1: an isError result with INVALID_ARGUMENT.
	res, err := c.CallTool(ctx, "greet", map[string]any{"name": ""})
	require.NotNil(t, res)
	require.True(t, res.IsError)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	require.Equal(t, mcp.ErrInvalidArgument, se.Code)

	// An unknown tool is a JSON-RPC -32602 error.
	_, err = c.CallTool(ctx, "nope", nil)
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr)
	require.EqualValues(t, mcp.CodeInvalidParams, rpcErr.Code)

	out, err := c.CallTool(ctx, "count_words", map[string]any{"text": "one two  three"})
	require.NoError(t, err)
	n, err := mcp.DecodeStructured[CountOutput](out)
	require.NoError(t, err)
	require.Equal(t, 3, n.Words)

	require.NoError(t, c.Close())
	require.NoError(t, <-done)
}
