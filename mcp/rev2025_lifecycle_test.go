//go:build !keel_omit2025

package mcp_test

import (
	"bufio"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// A handler sees the session it runs on: state, kind (the negotiated
// revision), connection correlation id and transport kind (the client's
// info is the request's: TestSessionIsTheConnection).
func TestSessionSeenByHandler(t *testing.T) {
	tools := mcptest.NewTools(mcptest.ToolSlow)
	tools.SlowStarted = make(chan *mcp.ToolCall, 1)
	tools.SlowDone = make(chan error, 1)
	copts := *quietClient
	copts.ProtocolVersion = mcp.Version20250618
	c, end := connect(t, mcptest.ServerOptions(tools), &copts)

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, mcptest.ToolSlow, nil)
		errc <- err
	}()
	call := recv(t, tools.SlowStarted, "the slow call")
	ss := call.Session
	require.NotNil(t, ss)
	assert.Equal(t, mcp.StateRunning, ss.StateForTest())
	assert.Equal(t, "RUNNING", ss.StateForTest().String())
	assert.Equal(t, mcp.Version20250618, ss.ProtocolVersion())
	assert.Equal(t, "id-1", ss.ConnectionCorrelationID(), "the first id of the deterministic generator")
	assert.Equal(t, "memory", ss.TransportKind())
	assert.Equal(t, "id-2", call.CorrelationID)
	assert.Equal(t, "id-3", call.RunID)
	assert.JSONEq(t, `{}`, string(call.Arguments), "absent arguments arrive as {}")
	cancel()
	require.ErrorIs(t, recv(t, errc, "CallTool"), context.Canceled)
	require.ErrorIs(t, recv(t, tools.SlowDone, "the handler's cancellation"), context.Canceled)
	require.NoError(t, end())
	assert.Equal(t, mcp.StateClosed, ss.StateForTest())
}

// Cancelling Run's context ends Run with the context's error and cancels
// in-flight handlers.
func TestRunContextCancelled(t *testing.T) {
	tools := mcptest.NewTools(mcptest.ToolSlow)
	tools.SlowStarted = make(chan *mcp.ToolCall, 1)
	tools.SlowDone = make(chan error, 1)
	ct, st := transport.NewPipe(nil)
	defer ct.Close()
	srv := mcp.NewServer(mcptest.ServerOptions(tools))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()

	c := mcp.NewClient(quietClient)
	require.NoError(t, c.Connect(context.Background(), mcptest.ValidateTransport(t, ct)))
	defer c.Close()
	go func() { _, _ = c.CallTool(context.Background(), mcptest.ToolSlow, nil) }()
	recv(t, tools.SlowStarted, "the slow call")
	cancel()
	require.ErrorIs(t, recv(t, done, "Run"), context.Canceled)
	require.ErrorIs(t, recv(t, tools.SlowDone, "the handler's cancellation"), context.Canceled)
	require.Error(t, c.Ping(context.Background()), "Run closed the transport")
}

// gatedTools adds a tool "gate" that returns "opened" once gate is closed.
type gatedTools struct {
	*mcptest.Tools
	started chan struct{}
	gate    chan struct{}
}

func (g *gatedTools) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "gate", InputSchema: []byte(`{"type":"object"}`)}}, nil
}

func (g *gatedTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if call.Name != "gate" {
		return g.Tools.CallTool(ctx, call)
	}
	close(g.started)
	<-g.gate
	return mcp.TextResult("opened"), nil
}

// When the input ends (stdio EOF), in-flight calls get ShutdownTimeout to
// finish and are still answered; then Run returns nil.
func TestRunDrainsInFlightCalls(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer outR.Close()
	tools := &gatedTools{Tools: mcptest.NewTools(), started: make(chan struct{}), gate: make(chan struct{})}
	opts := mcptest.ServerOptions(tools)
	opts.ShutdownTimeout = 5 * time.Second
	done := make(chan error, 1)
	go func() {
		done <- mcp.NewServer(opts).Run(context.Background(), transport.NewStdioStreams(inR, outW, nil))
	}()
	out := bufio.NewReader(outR)
	for _, line := range []string{
		initLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gate"}}`,
	} {
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
		if line == initLine { // io.Pipe is unbuffered: take the answer first
			_, err = out.ReadString('\n')
			require.NoError(t, err)
		}
	}
	recv(t, tools.started, "the gated call")
	require.NoError(t, inW.Close(), "EOF while the call is in flight")
	close(tools.gate)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"opened"}]}}`, line)
	require.NoError(t, recv(t, done, "Run"))
}
