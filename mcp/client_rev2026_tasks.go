package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Tasks as the 2026-07-28 extension, from the client's side. A modern
// Client that declares the extension (ClientOptions.Capabilities.Extensions
// holds ExtensionTasks) may be answered with a task instead of a result:
// CallTool then returns a *TaskStartedError naming it, and PollTask,
// UpdateTask, AnswerTask, WaitTask and CancelTask follow it.

// TaskStartedError is what CallTool and CallToolWithParams of a
// 2026-07-28 client return when the server made a task of the call: Task
// names it (its id, status and polling interval). Follow it with WaitTask,
// or with PollTask and AnswerTask. Match it with errors.As.
type TaskStartedError struct {
	Task TaskInfo
}

// Error implements error.
func (e *TaskStartedError) Error() string {
	return "mcp: the server runs the call as task " + e.Task.TaskID + " (status " + string(e.Task.Status) + ")"
}

// taskStarted decodes the task a tools/call was answered with.
func taskStarted(raw jsontext.Value) error {
	var t TaskCreatedResult
	if err := jsonv2.Unmarshal(raw, &t); err != nil || t.TaskID == "" {
		return fmt.Errorf("mcp: tools/call: malformed task result: %s", raw)
	}
	return &TaskStartedError{Task: t.TaskInfo}
}

// PollTask returns a task's state (tasks/get, 2026-07-28): its status, the
// input requests it waits for (input_required), its result (completed) or
// its error (failed). An unknown task is an *Error with code
// CodeInvalidParams.
func (c *Client) PollTask(ctx context.Context, taskID string) (*DetailedTask, error) {
	if err := c.mod.need(methodTasksGet, c.ProtocolVersion()); err != nil {
		return nil, err
	}
	var res DetailedTask
	if err := c.Call(ctx, methodTasksGet, &getTaskParams{TaskID: taskID}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// errGetTask2026 is GetTask's error on a 2026-07-28 client (nothing is
// sent): that revision's tasks/get is PollTask's.
var errGetTask2026 = fmt.Errorf("mcp: GetTask is the 2025-11-25 tasks/get; a %s client polls with PollTask", Version20260728)

// CancelTask cancels a task (tasks/cancel). On a 2025-11-25 connection it
// returns the task's state, now cancelled; a task already over is an
// *Error with code CodeInvalidParams.
//
// On a 2026-07-28 connection tasks/cancel answers with an empty ack:
// CancelTask returns a nil *Task; PollTask shows the cancelled status.
func (c *Client) CancelTask(ctx context.Context, taskID string) (*Task, error) {
	if !c.mod.on {
		return cancelTask2025(ctx, c, taskID) // rev2025_client_tasks.go
	}
	return nil, c.Call(ctx, methodTasksCancel, &cancelTaskParams{TaskID: taskID}, nil)
}

// RelatedTaskID returns the task id of
// _meta["io.modelcontextprotocol/related-task"] ("" when absent): the task
// a request, notification or result is tied to.
func RelatedTaskID(meta Meta) string {
	switch v := meta[metaRelatedTask].(type) {
	case map[string]any:
		id, _ := v["taskId"].(string)
		return id
	case relatedTaskMetadata:
		return v.TaskID
	case *relatedTaskMetadata:
		if v != nil {
			return v.TaskID
		}
	}
	return ""
}

// UpdateTask sends answers to the input requests of an input_required task
// (tasks/update, 2026-07-28), under the keys PollTask named them by.
func (c *Client) UpdateTask(ctx context.Context, taskID string, responses map[string]json.RawMessage) error {
	if err := c.mod.need(methodTasksUpdate, c.ProtocolVersion()); err != nil {
		return err
	}
	return c.Call(ctx, methodTasksUpdate, &updateTaskParams{TaskID: taskID, InputResponses: responses}, nil)
}

// AnswerTask answers the input requests of task t (as PollTask returned
// it) with the client's handlers (OnElicitation, OnSampling, Roots) and
// sends the answers with UpdateTask. A task that waits for nothing is left
// alone.
func (c *Client) AnswerTask(ctx context.Context, t *DetailedTask) error {
	if t == nil || t.Status != TaskStatusInputRequired || len(t.InputRequests) == 0 {
		return nil
	}
	out, err := c.mod.answerInputs(ctx, "task "+t.TaskID, t.InputRequests)
	if err != nil {
		return err
	}
	return c.UpdateTask(ctx, t.TaskID, out)
}

// WaitTask follows a task to its end: it polls at the task's
// pollIntervalMs (100ms when the server suggests none), answers its input
// requests with AnswerTask, and returns what the tools/call would have
// returned — the result (an isError one together with its
// *StructuredError), the *Error a failed task ended with, or an error for
// a cancelled task. Cancel ctx to stop waiting (the task goes on).
func (c *Client) WaitTask(ctx context.Context, taskID string) (*CallToolResult, error) {
	for {
		t, err := c.PollTask(ctx, taskID)
		if err != nil {
			return nil, err
		}
		switch t.Status {
		case TaskStatusCompleted:
			if t.Result == nil {
				return &CallToolResult{}, nil
			}
			if t.Result.IsError {
				return t.Result, resultError(t.Result)
			}
			return t.Result, nil
		case TaskStatusFailed:
			if t.Error == nil {
				return nil, &Error{Code: CodeInternalError, Message: "task " + taskID + " failed: " + t.StatusMessage}
			}
			e := &Error{Code: t.Error.Code, Message: t.Error.Message}
			if t.Error.Data != nil { // the raw JSON, as every error the Client returns carries it
				if b, err := jsonv2.Marshal(t.Error.Data); err == nil {
					e.Data = json.RawMessage(b)
				}
			}
			return nil, e
		case TaskStatusCancelled:
			return nil, fmt.Errorf("mcp: task %s was cancelled", taskID)
		case TaskStatusInputRequired:
			if err := c.AnswerTask(ctx, t); err != nil {
				return nil, err
			}
		}
		wait := 100 * time.Millisecond
		if t.PollIntervalMs != nil && *t.PollIntervalMs > 0 {
			wait = time.Duration(*t.PollIntervalMs) * time.Millisecond
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}
