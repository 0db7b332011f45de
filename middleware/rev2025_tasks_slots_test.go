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
