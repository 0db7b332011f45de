package middleware_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

// A call that runs as a task gets no default response deadline: its
// task's ttl bounds it.
func TestTimeoutSparesTasks(t *testing.T) {
	ctx := context.Background()
	reg := registry.New(nil)
	release := make(chan struct{})
	var slowAsTask atomic.Bool
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			if slowAsTask.Load() {
				mcp.StartTask(ctx) // a task at once (at 2026-07-28, where the server decides)
			}
			select {
			case <-release:
				return mcp.TextResult("finished"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, &registry.ToolOptions{TaskSupport: mcp.TaskOptional}))
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tasks: &mcp.TaskOptions{},
		Tools: middleware.Standard(reg, &middleware.StandardOptions{DefaultTimeout: 10 * time.Millisecond})})
	// A client that declares no tasks extension: its call cannot become a
	// task at 2026-07-28.
	plain := serveOn(t, srv, "memory", &mcp.ClientOptions{ProtocolVersion: clientVersion, Logger: slog.New(slog.DiscardHandler)})
	c := serveOn(t, srv, "memory", nil)

	_, err := plain.CallTool(ctx, "slow", nil)
	se := requireStructured(t, err)
	assert.Equal(t, mcp.ErrTimeout, se.Code, "a plain call times out")

	slowAsTask.Store(true)
	id, err := startTask(ctx, c, "slow")
	require.NoError(t, err)
	time.Sleep(30 * time.Millisecond) // past the default deadline
	status, err := taskStatus(ctx, c, id)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusWorking, status)
	close(release)
	res, err := taskResult(ctx, c, id)
	require.NoError(t, err)
	assert.Equal(t, "finished", res.Content[0].Text)
}
