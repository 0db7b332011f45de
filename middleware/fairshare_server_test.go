package middleware

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// End to end: a greedy session that fills its share of the default slots
// gets RESOURCE_EXHAUSTED at once; a polite session beside it is served.
func TestServerGreedySessionBesidePolite(t *testing.T) {
	reg := registry.New(nil)
	started := make(chan struct{}, 20)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "hog", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-release
			return mcp.TextResult("done"), nil
		}, nil))
	registry.MustRegister(reg, "echo", "Echoes.", func(_ context.Context, in echoIn) (string, error) { return in.Message, nil }, nil)
	lim := NewLimiter(DefaultMaxConcurrent)
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
		Tools: Standard(reg, &StandardOptions{Limiter: lim})})
	ctx := context.Background()
	connect := func() *mcp.Client {
		ct, st := transport.NewPipe(nil)
		go func() { _ = srv.Run(ctx, st) }()
		c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: testProtocolVersion, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, c.Connect(ctx, ct))
		t.Cleanup(func() { c.Close() })
		return c
	}
	greedy, polite := connect(), connect()

	share := DefaultPerClientShare(DefaultMaxConcurrent)
	var wg sync.WaitGroup
	for range share {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := greedy.CallTool(ctx, "hog", nil)
			assert.NoError(t, err)
		}()
		<-started
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := greedy.CallTool(cctx, "hog", nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.Equal(t, "maxConcurrentPerClient", se.Details["limit"])
	assert.Less(t, time.Since(start), 5*time.Second, "refused at once, not queued")

	res, err := polite.CallTool(ctx, "echo", map[string]any{"message": "served"})
	require.NoError(t, err)
	assert.Equal(t, "served", res.Content[0].Text)
	once.Do(func() { close(release) })
	wg.Wait()
}
