//go:build !keel_omit2025

package mcp

// rulesFor returns the task policy of revision rev: 2026-07-28's, else
// 2025-11-25's.
func rulesFor(rev string) taskRules {
	if rev == Version20260728 {
		return taskRules2026{}
	}
	return taskRules2025{}
}

// taskRules2025 is the policy of 2025-11-25 tasks (taskRules): a task
// fails for a JSON-RPC error or an isError result, with a message that
// says so; the failure of a result that cannot be encoded carries a
// StructuredError; a cancelled task keeps an isError result saying so, a
// deleted one answers tasks/result with one; and its status goes to the live sessions of its owner
// (notifications/tasks/status).
type taskRules2025 struct{}

func (taskRules2025) status(res *CallToolResult, rpcErr *Error, msg string) (TaskStatus, string) {
	isError := res != nil && res.IsError
	if isError && msg == "" {
		msg = resultErrorText(res)
	}
	if rpcErr != nil || isError {
		return TaskStatusFailed, "Tool execution failed: " + msg
	}
	return TaskStatusCompleted, msg
}

func (taskRules2025) limitMessage(msg string) string { return msg }

func (taskRules2025) unencodable(call *ToolCall) any {
	return &StructuredError{Code: ErrInternal, Message: "the result could not be encoded as JSON",
		CorrelationID: call.CorrelationID, RunID: call.RunID}
}

func (taskRules2025) cancelled(id string, call *ToolCall) *CallToolResult {
	se := &StructuredError{Code: ErrInternal, Message: "the task was cancelled",
		Details: map[string]any{"reason": "cancelled", "taskId": id}}
	if call != nil {
		se = withIDs(se, call)
	}
	return ToolErrorResult(se)
}

func (taskRules2025) announce(st *taskHost, e *taskEntry, rec *TaskRecord) { st.notifyStatus(e, rec) }

func (taskRules2025) settled(*taskEntry) {} // the run's exit releases its context

func (taskRules2025) deleted(e *taskEntry, why string) {
	e.r2025.gone = ToolErrorResult(&StructuredError{Code: ErrInternal, Message: "task " + why,
		Details: map[string]any{"reason": why, "taskId": e.id}})
}
