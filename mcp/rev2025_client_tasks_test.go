//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

func TestClientTaskLifecycle(t *testing.T) {
	ctx := context.Background()
	statuses := make(chan mcp.Task, 16)
	copts := *quietClient
	copts.OnTaskStatus = func(p *mcp.TaskStatusNotificationParams) { statuses <- p.Task }
	opts := taskServerOptions(mcptest.NewTools(mcptest.TaskTools...), &mcp.TaskOptions{PollInterval: -1})
	c, end := connect(t, opts, &copts)

	caps := c.InitializeResult().Capabilities.Tasks
	require.NotNil(t, caps)
	assert.NotNil(t, caps.List)
	assert.NotNil(t, caps.Cancel)
	require.NotNil(t, caps.Requests.Tools.Call)

	created, err := c.CallToolAsTask(ctx, mcptest.ToolTaskEcho, map[string]string{"message": "hi"}, time.Minute)
	require.NoError(t, err)
	task := created.Task
	assert.Len(t, task.TaskID, 36, "a random UUID")
	assert.Equal(t, mcp.TaskStatusWorking, task.Status)
	require.NotNil(t, task.TTL)
	assert.EqualValues(t, 60000, *task.TTL)
	assert.Nil(t, task.PollInterval, "PollInterval -1: none suggested")
	_, err = time.Parse(time.RFC3339, task.CreatedAt)
	require.NoError(t, err)

	res, err := c.TaskResult(ctx, task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, "hi", textOf(t, res))
	assert.Equal(t, task.TaskID, mcp.RelatedTaskID(res.Meta))

	got, err := c.GetTask(ctx, task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusCompleted, got.Status)
	select {
	case st := <-statuses:
		assert.Equal(t, task.TaskID, st.TaskID)
		assert.Equal(t, mcp.TaskStatusCompleted, st.Status)
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tasks/status")
	}

	all, err := c.ListAllTasks(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, task.TaskID, all[0].TaskID)

	_, err = c.CancelTask(ctx, task.TaskID)
	assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}), "a completed task cannot be cancelled: %v", err)
	require.NoError(t, end())
}

func TestClientTaskFailures(t *testing.T) {
	ctx := context.Background()
	c, _ := connect(t, taskServerOptions(mcptest.NewTools(slices.Concat(mcptest.TaskTools, []string{mcptest.ToolEcho})...), nil), nil)

	created, err := c.CallToolAsTask(ctx, mcptest.ToolTaskFail, nil, 0)
	require.NoError(t, err)
	res, err := c.TaskResult(ctx, created.Task.TaskID)
	require.NotNil(t, res)
	assert.True(t, res.IsError)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	got, err := c.GetTask(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusFailed, got.Status)
	assert.Contains(t, got.StatusMessage, "task_fail always fails")

	created, err = c.CallToolAsTask(ctx, mcptest.ToolTaskRPCError, nil, 0)
	require.NoError(t, err)
	_, err = c.TaskResult(ctx, created.Task.TaskID)
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.EqualValues(t, mcp.CodeInvalidParams, rpcErr.Code)

	_, err = c.CallToolAsTask(ctx, mcptest.ToolEcho, nil, 0)
	assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeMethodNotFound}), "echo does not support tasks: %v", err)
	_, err = c.CallTool(ctx, mcptest.ToolTaskRequired, nil)
	assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeMethodNotFound}), "task_required needs a task: %v", err)
	_, err = c.GetTask(ctx, "no-such-task")
	assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}))
}

func TestClientTaskCancel(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	tools := taskTools{"wait": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped <- ctx.Err()
		return mcp.TextResult("late"), nil
	}}
	c, _ := connect(t, taskServerOptions(tools, nil), nil)
	created, err := c.CallToolAsTask(ctx, "wait", nil, 0)
	require.NoError(t, err)
	<-started

	// tasks/result blocks until the task is over.
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	waiting := make(chan outcome, 1)
	go func() {
		res, err := c.TaskResult(ctx, created.Task.TaskID)
		waiting <- outcome{res, err}
	}()

	task, err := c.CancelTask(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusCancelled, task.Status)
	assert.ErrorIs(t, <-stopped, context.Canceled, "the handler's context is cancelled")

	o := <-waiting
	var se *mcp.StructuredError
	require.ErrorAs(t, o.err, &se)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.Equal(t, "cancelled", se.Details["reason"])

	got, err := c.GetTask(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusCancelled, got.Status, "a cancelled task stays cancelled although its handler returned a result")
}

func TestClientTasksNotOffered(t *testing.T) {
	ctx := context.Background()
	t.Run("server without tasks", func(t *testing.T) {
		c, _ := connect(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.TaskTools...)), nil)
		assert.Nil(t, c.InitializeResult().Capabilities.Tasks)
		_, err := c.CallToolAsTask(ctx, mcptest.ToolTaskEcho, nil, 0)
		assert.ErrorIs(t, err, mcp.ErrTasksNotOffered)
		// "task" sent anyway is ignored: the call runs normally.
		res, err := c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: mcptest.ToolTaskEcho,
			Arguments: json.RawMessage(`{"message":"plain"}`), Task: &mcp.TaskMetadata{}})
		require.NoError(t, err)
		assert.Equal(t, "plain", textOf(t, res))
		_, err = c.GetTask(ctx, "x")
		assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeMethodNotFound}))
	})
	for _, v := range []string{mcp.Version20250618, mcp.Version20250326, mcp.Version20241105} {
		t.Run(v, func(t *testing.T) {
			copts := *quietClient
			copts.ProtocolVersion = v
			c, _ := connect(t, taskServerOptions(mcptest.NewTools(mcptest.TaskTools...), nil), &copts)
			assert.Nil(t, c.InitializeResult().Capabilities.Tasks)
			_, err := c.CallToolAsTask(ctx, mcptest.ToolTaskEcho, nil, 0)
			assert.ErrorIs(t, err, mcp.ErrTasksNotOffered)
			_, err = c.ListTasks(ctx, "")
			assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeMethodNotFound}))
		})
	}
}

// clock is a settable clock for TaskOptions expiry tests.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestTaskTTLAndPurge(t *testing.T) {
	ctx := context.Background()
	clk := &clock{}
	clk.ns.Store(mcptest.FixedTime.UnixNano())
	stopped := make(chan error, 1)
	tools := taskTools{
		"quick": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) { return mcp.TextResult("ok"), nil },
		"wait": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			stopped <- ctx.Err()
			return nil, ctx.Err()
		},
	}
	opts := taskServerOptions(tools, &mcp.TaskOptions{TTL: 10 * time.Second, MaxTTL: time.Minute})
	opts.Now = clk.now
	c, _ := connect(t, opts, nil)

	quick, err := c.CallToolAsTask(ctx, "quick", nil, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 10000, *quick.Task.TTL, "the default ttl")
	_, err = c.TaskResult(ctx, quick.Task.TaskID)
	require.NoError(t, err)
	wait, err := c.CallToolAsTask(ctx, "wait", nil, time.Hour)
	require.NoError(t, err)
	assert.EqualValues(t, 60000, *wait.Task.TTL, "capped at MaxTTL")

	clk.advance(10 * time.Second) // quick expires; wait does not
	_, err = c.GetTask(ctx, quick.Task.TaskID)
	assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}), "expired tasks are purged: %v", err)
	_, err = c.TaskResult(ctx, quick.Task.TaskID)
	assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}))
	all, err := c.ListAllTasks(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, wait.Task.TaskID, all[0].TaskID)

	clk.advance(time.Minute) // wait expires while running: purged and cancelled
	all, err = c.ListAllTasks(ctx)
	require.NoError(t, err)
	assert.Empty(t, all)
	assert.ErrorIs(t, <-stopped, context.Canceled)
}

func TestTasksAreBoundToTheSessionOrTheOwner(t *testing.T) {
	ctx := context.Background()
	stopped := make(chan error, 4)
	tools := taskTools{"wait": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		stopped <- ctx.Err()
		return nil, ctx.Err()
	}}

	t.Run("session", func(t *testing.T) {
		srv := mcp.NewServer(taskServerOptions(tools, nil))
		a, b := dial(t, srv, nil), dial(t, srv, nil)
		created, err := a.CallToolAsTask(ctx, "wait", nil, 0)
		require.NoError(t, err)
		_, err = b.GetTask(ctx, created.Task.TaskID)
		assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}), "another session's task looks unknown")
		_, err = b.CancelTask(ctx, created.Task.TaskID)
		assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}))
		all, err := b.ListAllTasks(ctx)
		require.NoError(t, err)
		assert.Empty(t, all)
		require.NoError(t, a.Close())
		select {
		case err := <-stopped:
			assert.ErrorIs(t, err, context.Canceled, "the end of the session cancels its tasks")
		case <-time.After(5 * time.Second):
			t.Fatal("the task outlived its session")
		}
	})

	t.Run("owner", func(t *testing.T) {
		var who atomic.Value
		who.Store("alice")
		srv := mcp.NewServer(taskServerOptions(tools, &mcp.TaskOptions{
			Owner: func(ctx context.Context) string {
				require.NotNil(t, mcp.SessionFromContext(ctx))
				return who.Load().(string)
			}}))
		a, b := dial(t, srv, nil), dial(t, srv, nil)
		created, err := a.CallToolAsTask(ctx, "wait", nil, 0)
		require.NoError(t, err)
		require.NoError(t, a.Close())
		got, err := b.GetTask(ctx, created.Task.TaskID)
		require.NoError(t, err, "the owner's other session sees the task, which outlived its session")
		assert.Equal(t, mcp.TaskStatusWorking, got.Status)
		who.Store("mallory")
		_, err = b.GetTask(ctx, created.Task.TaskID)
		assert.True(t, errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}), "another owner's task looks unknown")
		who.Store("alice")
		_, err = b.CancelTask(ctx, created.Task.TaskID)
		require.NoError(t, err)
		assert.ErrorIs(t, <-stopped, context.Canceled)
	})
}

func TestTaskRequestsToTheClientCarryTheTask(t *testing.T) {
	ctx := context.Background()
	var seen atomic.Value
	copts := *quietClient
	var mu sync.Mutex
	var statuses []mcp.TaskStatus
	copts.OnTaskStatus = func(p *mcp.TaskStatusNotificationParams) {
		mu.Lock()
		statuses = append(statuses, p.Status)
		mu.Unlock()
	}
	copts.OnElicitation = func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		seen.Store(mcp.RelatedTaskID(p.Meta))
		// The status is written by the session's own sender, not before
		// the request: wait for it, so that the next does not replace it.
		assert.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(statuses) == 1 }, 5*time.Second, time.Millisecond)
		return &mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
	}
	c, _ := connect(t, taskServerOptions(mcptest.NewTools(mcptest.TaskTools...), nil), &copts)
	created, err := c.CallToolAsTask(ctx, mcptest.ToolTaskElicit, map[string]string{"message": "name?"}, 0)
	require.NoError(t, err)
	res, err := c.TaskResult(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Contains(t, textOf(t, res), "decline")
	assert.Equal(t, created.Task.TaskID, seen.Load())
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(statuses) > 0 && statuses[len(statuses)-1] == mcp.TaskStatusCompleted
	}, 5*time.Second, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	// "working" lasts as long as the tool takes to return after the answer:
	// while the session's sender is still writing, "completed" may replace
	// it before it is written (the latest status of a task wins).
	assert.Contains(t, [][]mcp.TaskStatus{
		{mcp.TaskStatusInputRequired, mcp.TaskStatusWorking, mcp.TaskStatusCompleted},
		{mcp.TaskStatusInputRequired, mcp.TaskStatusCompleted},
	}, statuses)
}

func TestManyConcurrentTasks(t *testing.T) {
	ctx := context.Background()
	c, _ := connect(t, taskServerOptions(mcptest.NewTools(mcptest.TaskTools...), &mcp.TaskOptions{MaxTasks: -1}), nil)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprint("m", i)
			created, err := c.CallToolAsTask(ctx, mcptest.ToolTaskEcho, map[string]string{"message": msg}, 0)
			if !assert.NoError(t, err) {
				return
			}
			res, err := c.TaskResult(ctx, created.Task.TaskID)
			if assert.NoError(t, err) {
				assert.Equal(t, msg, res.Content[0].Text)
			}
		}()
	}
	wg.Wait()
	all, err := c.ListAllTasks(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 20)
}
