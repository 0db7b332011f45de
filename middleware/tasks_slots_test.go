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

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

// Tasks run outside the request slots: a client that starts 12 long tasks
// (over three sessions, so that its per-client share would not stop it)
// and goes away holds none of the Concurrency stage's 10 slots, and
// another client's plain calls are still served.
func TestTasksHoldNoRequestSlots(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	reg := registry.New(nil)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "long", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			mcp.StartTask(ctx) // a task at once (at 2026-07-28, where the server decides)
			<-release          // a long task that does not stop when cancelled
			return mcp.TextResult("done"), nil
		}, &registry.ToolOptions{TaskSupport: mcp.TaskOptional}))
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "quick", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			return mcp.TextResult("served"), nil
		}, nil))
	limiter := middleware.NewLimiter(10)
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tasks: &mcp.TaskOptions{},
		Tools: middleware.Standard(reg, &middleware.StandardOptions{Limiter: limiter})})
	defer func() {
		releaseAll()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		assert.NoError(t, srv.StopTasks(sctx))
	}()

	for range 3 {
		greedy := serveOn(t, srv, "memory", nil)
		for range 4 {
			id, err := startTask(ctx, greedy, "long")
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				status, err := taskStatus(ctx, greedy, id)
				return err == nil && status == mcp.TaskStatusWorking
			}, 5*time.Second, time.Millisecond)
		}
		require.NoError(t, greedy.Close()) // gone; its handlers go on
	}
	time.Sleep(20 * time.Millisecond) // let every handler start
	assert.Zero(t, limiter.InUse(), "tasks hold no request slot")

	polite := serveOn(t, srv, "memory", nil)
	for range 10 {
		res, err := polite.CallTool(ctx, "quick", nil)
		require.NoError(t, err)
		require.False(t, res.IsError, "a plain call is served: %v", res.Content)
		assert.Equal(t, "served", res.Content[0].Text)
	}
}
