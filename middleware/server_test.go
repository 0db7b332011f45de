package middleware_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// End to end over the in-memory transport: the client gets TIMEOUT at the
// deadline while the handler still runs; the slot stays taken until the
// handler returns; its late result is never sent; the server lives on.
func TestServerTimeoutAnsweredAtOnce(t *testing.T) {
	reg := registry.New(nil)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-release // ignores ctx on purpose
			return mcp.TextResult("too late"), nil
		}, &registry.ToolOptions{Timeout: 20 * time.Millisecond}))
	registry.MustRegister(reg, "echo", "Echoes.", func(_ context.Context, in struct {
		Message string `json:"message"`
	}) (string, error) {
		return in.Message, nil
	}, nil)
	lim := middleware.NewLimiter(1)
	var logs exampletest.SafeBuffer
	srv := mcp.NewServer(&mcp.ServerOptions{
		Tools:  middleware.Standard(reg, &middleware.StandardOptions{Limiter: lim}),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	ct, st := transport.NewPipe(nil)
	// Bounded: if the deadline stopped answering early, the call fails
	// instead of waiting for the handler forever.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var freed sync.Once
	free := func() { freed.Do(func() { close(release) }) }
	defer free()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	client := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: clientVersion})
	require.NoError(t, client.Connect(ctx, ct))

	start := time.Now()
	res, err := client.CallTool(ctx, "stubborn", nil)
	<-started
	require.Error(t, err)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrTimeout, se.Code)
	assert.NotEmpty(t, se.CorrelationID)
	assert.NotEmpty(t, se.RunID)
	require.NotNil(t, res)
	assert.True(t, res.IsError)
	assert.Less(t, time.Since(start), 5*time.Second)

	// The handler still runs and holds the only slot.
	assert.Equal(t, 1, lim.InUse())
	_, err = client.CallTool(ctx, "echo", map[string]any{"message": "busy?"})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)

	free()
	require.Eventually(t, func() bool { return lim.InUse() == 0 }, 5*time.Second, time.Millisecond)
	res, err = client.CallTool(ctx, "echo", map[string]any{"message": "alive"})
	require.NoError(t, err)
	assert.Equal(t, "alive", res.Content[0].Text)
	require.NoError(t, client.Close())
	require.NoError(t, <-done)
	assert.Contains(t, logs.String(), "returned after its deadline")
	assert.NotContains(t, logs.String(), "too late", "the late result is never sent nor logged in full")
}
