package main

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
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

// envServe makes the test binary run main, the real stdio server, for
// TestOverStdio.
const envServe = "KEEL_HELLO_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(envServe) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The real server process over stdio, driven by keel's Client through
// transport.NewCommand (every message checked against the schema); closing
// the Client closes the server's stdin and the server exits cleanly.
func TestOverStdio(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServe+"=1")
	tr, err := transport.NewCommand(cmd, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(nil)
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, tr)))
	require.Equal(t, "hello", c.InitializeResult().ServerInfo.Name)

	res, err := c.CallTool(ctx, "greet", map[string]any{"name": "Ada"})
	require.NoError(t, err)
	out, err := mcp.DecodeStructured[GreetOutput](res)
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", out.Greeting)

	require.NoError(t, c.Close())
	require.NoError(t, tr.Close(), "the server exited with status 0")
}
