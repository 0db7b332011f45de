package mcp

import (
	"context"
	"encoding/json"
)

// Tasks as the extension of revision 2026-07-28 (io.modelcontextprotocol/tasks,
// SEP-2663). With ServerOptions.Tasks set, server/discover advertises the
// extension, and a modern tools/call of a tool whose execution.taskSupport
// is optional or required (registry.ToolOptions.TaskSupport), from a request
// whose clientCapabilities.extensions declares the extension, may be
// answered with a task instead of its result:
//
//	{"resultType": "task", "taskId": "…", "status": "working", "createdAt": "…",
//	 "lastUpdatedAt": "…", "ttlMs": 3600000, "pollIntervalMs": 1000}
//
// The server decides (the legacy params.task is ignored): the handler
// starts at once, and a call still running after TaskOptions.ImmediateWait,
// or whose handler calls StartTask, becomes a task; a quicker one is
// answered directly (the immediate-result shortcut), and so is an
// InputRequiredError returned before that (an ordinary input_required
// round). A tool whose support is required, called by a request that did
// not declare the extension, is refused with -32021 naming it.
//
// The client polls with tasks/get, whose DetailedTask inlines the tool's
// result once completed (an isError result too), the JSON-RPC error once
// failed, and the pending input requests while input_required. A handler
// running as a task that returns InputRequired(...) parks the task in
// input_required; its requests appear on tasks/get under keys the server
// mints, and once tasks/update has delivered an answer to each of them
// the handler runs again with an *Input holding them (InputFromContext),
// as in an input_required round. tasks/cancel cancels the handler's
// context and settles the task as cancelled. tasks/get, tasks/update and
// tasks/cancel answer -32021 to a request that does not declare the
// extension and -32602 for an unknown task; tasks/result and tasks/list do
// not exist in this revision (-32601).
//
// Tasks of modern requests belong to no connection: any later request of
// the same caller (the subject of its verified bearer token, or
// TaskOptions.Owner) may poll them; callers without one share a scope, and
// task ids are random UUIDs. A task's handler runs on a goroutine the
// server owns (the task runner, in the task pool: TaskOptions.MaxRunning
// and MaxRunningPerOwner bound such calls from their start, and a call
// that finds the pool full is answered with a RESOURCE_EXHAUSTED isError
// result); it ends with the handler, and its context is cancelled by
// tasks/cancel, by the task's ttl, by TaskOptions.MaxRunTime (the task
// then fails naming that limit) and by Server.StopTasks. Finished tasks
// are bounded as those of 2025-11-25 are (MaxFinishedTasks,
// MaxFinishedBytes, MaxResultBytes; see TaskOptions).

// TaskInfo is the state of a task of the tasks extension (2026-07-28).
type TaskInfo struct {
	TaskID        string     `json:"taskId"`
	Status        TaskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     string     `json:"createdAt"`     // ISO 8601
	LastUpdatedAt string     `json:"lastUpdatedAt"` // ISO 8601
	// TTLMs is how long the task is kept after its creation, in
	// milliseconds; it is always written, and null means unlimited.
	TTLMs *int64 `json:"ttlMs"`
	// PollIntervalMs is the suggested polling interval, in milliseconds.
	PollIntervalMs *int64 `json:"pollIntervalMs,omitzero"`
}

// TaskCreatedResult is the answer to a tools/call that became a task
// (2026-07-28, resultType "task"): the task's state, flat.
type TaskCreatedResult struct {
	ResultType string `json:"resultType"` // resultTypeTask
	TaskInfo
	Meta Meta `json:"_meta,omitempty"`
}

// DetailedTask is the result of tasks/get (2026-07-28): the task's state
// and, by status, what the client needs: InputRequests while
// input_required, the tool's Result once completed, the JSON-RPC Error
// once failed.
type DetailedTask struct {
	ResultType string `json:"resultType"` // resultTypeComplete
	TaskInfo
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	Result        *CallToolResult         `json:"result,omitempty"`
	Error         *TaskError              `json:"error,omitempty"`
	Meta          Meta                    `json:"_meta,omitempty"`
}

// TaskError is the JSON-RPC error a failed task ended with, as
// DetailedTask carries it.
type TaskError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// updateTaskParams are the params of tasks/update (2026-07-28): answers to
// the input requests of an input_required task, under the keys tasks/get
// named them by. Keys the task is not waiting for are ignored.
type updateTaskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Meta           Meta                       `json:"_meta,omitempty"`
}

// StartTask turns the tools/call ctx belongs to into a task now, when it
// may be one: a 2026-07-28 call of a tool that supports tasks, from a
// request that declared the tasks extension. The request is answered with
// the task at once; the handler goes on running as it, and an
// InputRequiredError it returns from then on parks the task instead of
// answering the request. It reports whether the call runs as a task (also
// true for a 2025-11-25 task); false means the call is answered directly
// (it cannot be a task, or the caller has TaskOptions.MaxTasks tasks in
// progress).
func StartTask(ctx context.Context) bool {
	call := ToolCallFromContext(ctx)
	switch {
	case call == nil:
		return false
	case call.task != nil:
		return true
	case call.run == nil:
		return false
	}
	return call.run.escalate()
}

// StopTasks cancels the context of every task handler still running (of
// both eras) and of every call that may still become a task, refuses to
// start new ones, and waits until the handlers have returned or ctx ends.
// It also waits for the handlers of 2026-07-28 requests served by
// ServeRequest (streamable HTTP) that were answered at a deadline and run
// on (see ToolCall.Detach; their contexts have ended already). Call it
// when the server shuts down, after the transports stopped.
func (s *Server) StopTasks(ctx context.Context) error {
	if st := s.tasks; st != nil {
		if st.unwatch != nil {
			st.unwatch()
		}
		st.runner.stop()
		st.stopAll()
		if err := st.runner.wait(ctx); err != nil {
			return err
		}
	}
	return s.detached.wait(ctx)
}

// declaresTasks reports whether caps declare the tasks extension.
func declaresTasks(caps ClientCapabilities) bool {
	_, ok := caps.Extensions[ExtensionTasks]
	return ok
}

// tasksExtension is the capability naming the tasks extension (in
// discover, and in -32021's requiredCapabilities).
func tasksExtension() map[string]any {
	return map[string]any{ExtensionTasks: map[string]any{}}
}

// errTasksExtensionRequired is the -32021 answer to a request that needs
// the tasks extension and did not declare it.
func errTasksExtensionRequired(what string) *Error {
	return MissingCapabilityError(ClientCapabilities{Extensions: tasksExtension()},
		"Missing required client capability: "+what+" needs the "+ExtensionTasks+" extension")
}

// withoutExecution returns tools without their execution member, which
// revision 2026-07-28 removed (task support is the tasks extension's
// business: rev2026_tasks.go). Tools without one are shared, not copied.
func withoutExecution(tools []*Tool) []*Tool {
	var out []*Tool
	for i, t := range tools {
		if t.Execution == nil {
			if out != nil {
				out[i] = t
			}
			continue
		}
		if out == nil {
			out = make([]*Tool, len(tools))
			copy(out, tools[:i])
		}
		c := *t
		c.Execution = nil
		out[i] = &c
	}
	if out == nil {
		return tools
	}
	return out
}

// sameSlice reports whether a and b are the same slice (a downgrade that
// stripped nothing returns its input).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// taskRules2026 is the policy of 2026-07-28 tasks (taskRules): a task
// fails for a JSON-RPC error only, with its message (none for a limit's);
// an isError result completes it, described by its error; a cancelled
// task keeps no result; its status reaches the subscriptions that listen
// to it; and its handler's context is released once its outcome is
// recorded.
type taskRules2026 struct{}

func (taskRules2026) status(res *CallToolResult, rpcErr *Error, msg string) (TaskStatus, string) {
	switch {
	case rpcErr != nil:
		return TaskStatusFailed, msg
	case res != nil && res.IsError:
		return TaskStatusCompleted, resultErrorText(res)
	}
	return TaskStatusCompleted, msg
}

func (taskRules2026) limitMessage(string) string                           { return "" }
func (taskRules2026) unencodable(*ToolCall) any                            { return nil }
func (taskRules2026) cancelled(string, *ToolCall) *CallToolResult          { return nil }
func (taskRules2026) announce(st *taskHost, _ *taskEntry, rec *TaskRecord) { st.changed(rec.State) }
func (taskRules2026) settled(e *taskEntry)                                 { e.cancel() }
func (taskRules2026) deleted(*taskEntry, string)                           {}
