//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// Finished tasks are bounded per owner by the bytes of their results: the
// oldest are evicted and read as not found.
func TestFinishedTasksBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	const size, limit = 20 << 10, 200 << 10 // 20 KiB per result, 200 KiB per owner
	big := strings.Repeat("x", size)
	tools := taskTools{"big": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		return mcp.TextResult(big), nil
	}}
	c, _ := connect(t, taskServerOptions(tools, &mcp.TaskOptions{MaxFinishedBytes: limit}), nil)
	var ids []string
	for range 60 {
		created, err := c.CallToolAsTask(ctx, "big", nil, 0)
		require.NoError(t, err)
		res, err := c.TaskResult(ctx, created.Task.TaskID)
		require.NoError(t, err)
		require.Len(t, res.Content[0].Text, size)
		ids = append(ids, created.Task.TaskID)
	}
	all, err := c.ListAllTasks(ctx)
	require.NoError(t, err)
	// Each result is a little over 20 KiB of JSON: fewer than 10 fit.
	assert.Less(t, len(all), limit/size, "the finished tasks stay within MaxFinishedBytes")
	assert.GreaterOrEqual(t, len(all), 5)
	assert.Equal(t, ids[len(ids)-1], all[len(all)-1].TaskID, "the newest is kept")
	for _, id := range ids[:len(ids)-len(all)] {
		_, err := c.GetTask(ctx, id)
		var e *mcp.Error
		require.ErrorAs(t, err, &e, "an evicted task reads as not found")
		assert.EqualValues(t, mcp.CodeInvalidParams, e.Code)
	}
}

// Finished tasks are bounded per owner by count; another owner (here a
// second session) has its own bound.
func TestFinishedTasksBoundedByCount(t *testing.T) {
	ctx := context.Background()
	tools := taskTools{"echo": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		return mcp.TextResult("ok"), nil
	}}
	srv := mcp.NewServer(taskServerOptions(tools, &mcp.TaskOptions{MaxFinishedTasks: 5}))
	a, b := dial(t, srv, nil), dial(t, srv, nil)
	created, err := b.CallToolAsTask(ctx, "echo", nil, 0)
	require.NoError(t, err)
	_, err = b.TaskResult(ctx, created.Task.TaskID)
	require.NoError(t, err)
	for range 12 {
		created, err := a.CallToolAsTask(ctx, "echo", nil, 0)
		require.NoError(t, err)
		_, err = a.TaskResult(ctx, created.Task.TaskID)
		require.NoError(t, err)
	}
	all, err := a.ListAllTasks(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 5)
	mine, err := b.ListAllTasks(ctx)
	require.NoError(t, err)
	assert.Len(t, mine, 1, "another owner's finished task is not evicted")
}

// A result over MaxResultBytes is not stored: the task fails with an error
// naming the limit.
func TestTaskResultOverCap(t *testing.T) {
	ctx := context.Background()
	tools := taskTools{
		"big": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
			return mcp.TextResult(strings.Repeat("y", 5000)), nil
		},
		"small": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) { return mcp.TextResult("fits"), nil },
	}
	c, _ := connect(t, taskServerOptions(tools, &mcp.TaskOptions{MaxResultBytes: 4096}), nil)
	created, err := c.CallToolAsTask(ctx, "big", nil, 0)
	require.NoError(t, err)
	_, err = c.TaskResult(ctx, created.Task.TaskID)
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.EqualValues(t, mcp.CodeInternalError, e.Code)
	assert.Contains(t, e.Message, "MaxResultBytes")
	assert.Contains(t, e.Message, "4096")
	task, err := c.GetTask(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusFailed, task.Status)
	assert.Contains(t, task.StatusMessage, "MaxResultBytes")

	created, err = c.CallToolAsTask(ctx, "small", nil, 0)
	require.NoError(t, err)
	res, err := c.TaskResult(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, "fits", res.Content[0].Text)
}

// A task past MaxRunTime fails at once with an error naming the limit,
// even when its handler ignores its context.
func TestTaskMaxRunTime(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var returned atomic.Bool
	tools := taskTools{"stubborn": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		<-release // ignores its context
		returned.Store(true)
		return mcp.TextResult("too late"), nil
	}}
	srv := mcp.NewServer(taskServerOptions(tools, &mcp.TaskOptions{MaxRunTime: 50 * time.Millisecond}))
	defer func() {
		close(release)
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		assert.NoError(t, srv.StopTasks(sctx))
	}()
	c := dial(t, srv, nil)
	created, err := c.CallToolAsTask(ctx, "stubborn", nil, 0)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second) // the limit, not this, must end it
	defer cancel()
	_, err = c.TaskResult(wctx, created.Task.TaskID)
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "MaxRunTime")
	data, _ := json.Marshal(e.Data)
	assert.Contains(t, string(data), `"limit":"maxRunTime"`)
	assert.Contains(t, string(data), `"code":"TIMEOUT"`)
	assert.False(t, returned.Load(), "the task failed while its handler still ran")
	task, err := c.GetTask(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusFailed, task.Status)
}

// A client that starts many tasks and goes away cannot exceed the running
// caps: the total for the server, and its own share.
func TestTaskRunningCaps(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var running atomic.Int32
	tools := taskTools{"stubborn": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		running.Add(1)
		defer running.Add(-1)
		<-release // ignores its context: holds its slot until it returns
		return mcp.TextResult("done"), nil
	}}
	srv := mcp.NewServer(taskServerOptions(tools, &mcp.TaskOptions{MaxRunning: 6, MaxRunningPerOwner: 4}))
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer func() {
		releaseAll()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		assert.NoError(t, srv.StopTasks(sctx))
	}()

	greedy := dial(t, srv, nil)
	refusals := map[string]int{}
	for range 10 {
		created, res := callTaskRaw(t, greedy, "stubborn")
		if created == nil {
			se := structured(t, res)
			assert.Equal(t, "RESOURCE_EXHAUSTED", se["code"])
			refusals[se["details"].(map[string]any)["limit"].(string)]++
		}
	}
	assert.Equal(t, map[string]int{"maxRunningPerOwner": 6}, refusals, "one owner gets its share only")
	require.NoError(t, greedy.Close()) // its tasks are cancelled; their handlers go on

	second := dial(t, srv, nil)
	refusals = map[string]int{}
	for range 4 {
		if created, res := callTaskRaw(t, second, "stubborn"); created == nil {
			refusals[structured(t, res)["details"].(map[string]any)["limit"].(string)]++
		}
	}
	assert.Equal(t, map[string]int{"maxRunning": 2}, refusals, "the handlers of the gone client still count")
	require.Eventually(t, func() bool { return running.Load() == 6 }, 5*time.Second, time.Millisecond)

	releaseAll()
	third := dial(t, srv, nil)
	require.Eventually(t, func() bool {
		created, _ := callTaskRaw(t, third, "stubborn")
		return created != nil
	}, 5*time.Second, 5*time.Millisecond, "slots come back when the handlers return")
}

// A panicking task handler is recovered by the task runner: the task fails
// with an INTERNAL tool error, its pool slot comes back, the server lives on.
func TestTaskHandlerPanic(t *testing.T) {
	ctx := context.Background()
	tools := taskTools{
		"boom": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) { panic("kaboom") },
		"ok":   func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) { return mcp.TextResult("fine"), nil },
	}
	c, _ := connect(t, taskServerOptions(tools, &mcp.TaskOptions{MaxRunningPerOwner: 1}), nil)
	for range 3 { // one slot: each panic must give it back
		var created *mcp.CreateTaskResult
		require.Eventually(t, func() bool { // the previous task's slot comes back once its handler returned
			created, _ = callTaskRaw(t, c, "boom")
			return created != nil
		}, 5*time.Second, time.Millisecond)
		_, err := c.TaskResult(ctx, created.Task.TaskID)
		var se *mcp.StructuredError
		require.ErrorAs(t, err, &se, "an isError result")
		assert.Equal(t, mcp.ErrInternal, se.Code)
		assert.Equal(t, "panic", se.Details["reason"])
		require.Eventually(t, func() bool {
			created, _ := callTaskRaw(t, c, "ok")
			if created == nil {
				return false
			}
			_, err := c.TaskResult(ctx, created.Task.TaskID)
			return err == nil
		}, 5*time.Second, time.Millisecond)
	}
}

// Tasks in progress are bounded on the server as well as per owner
// (MaxTasksTotal): many owners cannot add up without bound. A call beyond
// gets a retryable RESOURCE_EXHAUSTED naming the limit.
func TestTasksInProgressBoundedInAll(t *testing.T) {
	release := make(chan struct{})
	tools := taskTools{"wait": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		<-release
		return mcp.TextResult("done"), nil
	}}
	srv := mcp.NewServer(taskServerOptions(tools, &mcp.TaskOptions{MaxTasks: 2, MaxTasksTotal: 3}))
	defer func() {
		close(release)
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, srv.StopTasks(sctx))
	}()
	a, b := dial(t, srv, nil), dial(t, srv, nil)
	limitOf := func(c *mcp.Client) string {
		created, res := callTaskRaw(t, c, "wait")
		if created != nil {
			return ""
		}
		se := structured(t, res)
		assert.Equal(t, "RESOURCE_EXHAUSTED", se["code"])
		assert.Equal(t, true, se["retryable"])
		return se["details"].(map[string]any)["limit"].(string)
	}
	assert.Equal(t, []string{"", "", "maxTasks"}, []string{limitOf(a), limitOf(a), limitOf(a)}, "one owner's share")
	assert.Equal(t, []string{"", "maxTasksTotal"}, []string{limitOf(b), limitOf(b)}, "the server's bound, all owners together")
}

// The finished tasks of all owners together hold at most
// MaxFinishedBytesTotal: a task that finishes beyond it evicts its own
// owner's oldest, never another owner's; with none to evict it fails
// naming the limit (retryable). Once even that would not fit, a new task
// is refused naming the limit.
func TestFinishedTasksBoundedInAll(t *testing.T) {
	ctx := context.Background()
	const size, limit = 20 << 10, 100 << 10 // 20 KiB per result, 100 KiB in all
	big := strings.Repeat("x", size)
	tools := taskTools{
		"big":   func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) { return mcp.TextResult(big), nil },
		"small": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) { return mcp.TextResult("ok"), nil },
	}
	srv := mcp.NewServer(taskServerOptions(tools, &mcp.TaskOptions{MaxFinishedBytesTotal: limit}))
	a, b := dial(t, srv, nil), dial(t, srv, nil)
	run := func(c *mcp.Client, tool string) (string, error) {
		created, err := c.CallToolAsTask(ctx, tool, nil, 0)
		require.NoError(t, err)
		_, err = c.TaskResult(ctx, created.Task.TaskID)
		return created.Task.TaskID, err
	}
	var ids []string
	for range 4 {
		id, err := run(a, "big")
		require.NoError(t, err)
		ids = append(ids, id)
	}
	_, err := run(b, "big")
	var e *mcp.Error
	require.ErrorAs(t, err, &e, "another owner's task fails rather than evict the first owner's")
	se, ok := e.StructuredError()
	require.True(t, ok)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.True(t, se.Retryable)
	assert.Equal(t, "maxFinishedBytesTotal", se.Details["limit"])
	assert.Contains(t, se.Message, "MaxFinishedBytesTotal")
	for _, id := range ids {
		_, err := a.GetTask(ctx, id)
		assert.NoError(t, err, "the first owner's finished tasks are kept")
	}

	id, err := run(a, "big")
	require.NoError(t, err, "an owner makes room from its own finished tasks")
	_, err = a.GetTask(ctx, id)
	require.NoError(t, err)
	_, err = a.GetTask(ctx, ids[0])
	assert.Error(t, err, "its oldest was evicted")
	all, err := a.ListAllTasks(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 4)

	tiny := mcp.NewServer(taskServerOptions(tools, &mcp.TaskOptions{MaxFinishedBytesTotal: 1000}))
	c, d := dial(t, tiny, nil), dial(t, tiny, nil)
	_, err = run(c, "small")
	require.NoError(t, err)
	created, res := callTaskRaw(t, d, "small")
	require.Nil(t, created, "no room even for a failure: the task is refused")
	rse := structured(t, res)
	assert.Equal(t, "RESOURCE_EXHAUSTED", rse["code"])
	assert.Equal(t, "maxFinishedBytesTotal", rse["details"].(map[string]any)["limit"])
}
