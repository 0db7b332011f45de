//go:build !keel_omit2025

package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The Client's side of tasks (2025-11-25, experimental): calling a tool as
// a task, then polling, collecting, cancelling and listing tasks. Status
// notifications reach ClientOptions.OnTaskStatus. Revision 2026-07-28 has
// tasks as an extension instead (client_rev2026_tasks.go). Left out by the
// build tag keel_omit2025 (rev2025_omitted_client.go).

// ErrTasksNotOffered is returned by CallToolAsTask when the server did not
// declare task-augmented tools/call (capabilities.tasks.requests.tools.call);
// nothing is sent.
var ErrTasksNotOffered = errors.New("mcp: the server does not offer task-augmented tools/call")

// CallToolAsTask calls a tool as a task: the server answers at once with the
// task it created (status working) while the tool runs in the background.
// Poll it with GetTask and collect the tool's result with TaskResult. args
// are as for CallTool; ttl is the lifetime asked for, counted from the
// task's creation (0 = the server's default; the server may shorten it:
// see the returned Task's TTL). A tool whose execution.taskSupport forbids
// tasks gets an *Error with code CodeMethodNotFound. A 2026-07-28 client
// has no task-augmented tools/call (the error wraps ErrMethodRemoved): it
// declares the tasks extension and calls CallTool, which returns a
// *TaskStartedError when the server makes a task of the call.
func (c *Client) CallToolAsTask(ctx context.Context, name string, args any, ttl time.Duration) (*CreateTaskResult, error) {
	if err := c.mod.removed(methodToolsCall+" with params.task", hintCallToolAsTask); err != nil {
		return nil, err
	}
	if !offersTaskCalls(c.InitializeResult()) {
		return nil, ErrTasksNotOffered
	}
	p := &CallToolParams{Name: name, Task: &TaskMetadata{}}
	if ttl > 0 {
		ms := max(ttl.Milliseconds(), 1)
		p.Task.TTL = &ms
	}
	var err error
	if p.Arguments, err = toolArguments(name, args); err != nil {
		return nil, err
	}
	var raw jsontext.Value
	if err := c.Call(ctx, methodToolsCall, p, &raw); err != nil {
		return nil, err
	}
	var res CreateTaskResult
	if err := jsonv2.Unmarshal(raw, &res); err != nil || res.Task.TaskID == "" {
		return nil, fmt.Errorf("mcp: tools/call of %q as a task: the server answered without a task", name)
	}
	return &res, nil
}

// offersTaskCalls reports whether the server of res declared
// task-augmented tools/call (capabilities.tasks.requests.tools.call).
func offersTaskCalls(res *InitializeResult) bool {
	if res == nil {
		return false
	}
	caps := res.Capabilities.Tasks
	return caps != nil && caps.Requests != nil && caps.Requests.Tools != nil && caps.Requests.Tools.Call != nil
}

// GetTask returns the current state of a task (tasks/get). An unknown or
// expired task is an *Error with code CodeInvalidParams. A 2026-07-28
// client polls with PollTask: GetTask sends nothing and returns an error
// that says so.
func (c *Client) GetTask(ctx context.Context, taskID string) (*Task, error) {
	if c.mod.on {
		return nil, errGetTask2026
	}
	var res GetTaskResult
	if err := c.Call(ctx, methodTasksGet, &getTaskParams{TaskID: taskID}, &res); err != nil {
		return nil, err
	}
	return &res.Task, nil
}

// TaskResult waits until a task is over (tasks/result) and returns what the
// tools/call would have returned, like CallToolWithParams: a JSON-RPC error
// as *Error; an isError result (a failed or cancelled task) together with
// its *StructuredError. The result's _meta names the task
// ("io.modelcontextprotocol/related-task"; see RelatedTaskID). Cancel ctx
// to stop waiting (the task goes on). Revision 2026-07-28 has no
// tasks/result (the error wraps ErrMethodRemoved): its client waits with
// WaitTask.
func (c *Client) TaskResult(ctx context.Context, taskID string) (*CallToolResult, error) {
	if err := c.mod.removed(methodTasksResult, hintTaskResult); err != nil {
		return nil, err
	}
	var res CallToolResult
	if err := c.Call(ctx, methodTasksResult, &getTaskPayloadParams{TaskID: taskID}, &res); err != nil {
		return nil, err
	}
	if res.IsError {
		return &res, resultError(&res)
	}
	return &res, nil
}

// cancelTask2025 sends the 2025-11-25 tasks/cancel (see CancelTask),
// whose answer is the task, now cancelled.
func cancelTask2025(ctx context.Context, c *Client, taskID string) (*Task, error) {
	var res CancelTaskResult
	if err := c.Call(ctx, methodTasksCancel, &cancelTaskParams{TaskID: taskID}, &res); err != nil {
		return nil, err
	}
	return &res.Task, nil
}

// ListTasks fetches one page of the caller's tasks ("" = the first page).
// Revision 2026-07-28 has no tasks/list: the error wraps ErrMethodRemoved.
func (c *Client) ListTasks(ctx context.Context, cursor string) (*ListTasksResult, error) {
	if err := c.mod.removed(methodTasksList, ""); err != nil {
		return nil, err
	}
	return fetchPage[ListTasksResult](ctx, c, methodTasksList, cursor)
}

// ListAllTasks follows nextCursor until the last page.
func (c *Client) ListAllTasks(ctx context.Context) ([]*Task, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*Task, string, error) {
		res, err := c.ListTasks(ctx, cursor)
		if err != nil {
			return nil, "", err
		}
		return res.Tasks, res.NextCursor, nil
	})
}

// taskStatus hands notifications/tasks/status to ClientOptions.OnTaskStatus.
func (r *clientReader) taskStatus(m *jsonrpc.Message) {
	if r.opts.OnTaskStatus == nil || m.Method != notificationTasksStatus {
		return
	}
	var p TaskStatusNotificationParams
	if m.Params == nil || jsonv2.Unmarshal(m.Params, &p) != nil {
		r.log.Warn("mcp: client received a malformed notifications/tasks/status")
		return
	}
	r.opts.OnTaskStatus(&p)
}
