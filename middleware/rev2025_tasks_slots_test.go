//go:build !keel_omit2025

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
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			<-release // a long task that does not stop when cancelled
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
			created, err := greedy.CallToolAsTask(ctx, "long", nil, 0)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				task, err := greedy.GetTask(ctx, created.Task.TaskID)
				return err == nil && task.Status == mcp.TaskStatusWorking
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

// A task whose tool has a per-tool Timeout fails with TIMEOUT at the
// deadline, while its handler (ignoring its context) runs on; the task
// pool's slot stays held until the handler really returns, so a second
// task of a pool of one is refused meanwhile, and StopTasks waits for it.
func TestTaskTimeoutHoldsThePoolSlotUntilTheHandlerReturns(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	reg := registry.New(nil)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			<-release // ignores its context
			return mcp.TextResult("late"), nil
		}, &registry.ToolOptions{TaskSupport: mcp.TaskOptional, Timeout: 20 * time.Millisecond}))
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tasks: &mcp.TaskOptions{MaxRunning: 1},
		Tools: middleware.Standard(reg, nil)})
	c := serveOn(t, srv, "memory", nil)

	created, err := c.CallToolAsTask(ctx, "stubborn", nil, 0)
	require.NoError(t, err)
	_, err = c.TaskResult(ctx, created.Task.TaskID)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se, "the task fails at the deadline, its handler still running")
	assert.Equal(t, mcp.ErrTimeout, se.Code)

	var refused mcp.CallToolResult // a second task, refused while the first's handler runs on
	require.NoError(t, c.Call(ctx, "tools/call", &mcp.CallToolParams{Name: "stubborn", Task: &mcp.TaskMetadata{}}, &refused))
	require.True(t, refused.IsError, "the pool's one slot is still held")
	assert.Contains(t, refused.Content[0].Text, `"limit":"maxRunning"`)

	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	assert.ErrorIs(t, srv.StopTasks(sctx), context.DeadlineExceeded, "StopTasks waits for the handler")
	cancel()
	free()
	sctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	assert.NoError(t, srv.StopTasks(sctx), "the handler returned: its slot and run are released")
}
