package mcp

// TaskStatus is the state of a task (2025-11-25).
type TaskStatus string

// Task states. A task starts working, may go to input_required and back,
// and ends in one of the terminal states completed, failed or cancelled.
const (
	TaskStatusWorking       TaskStatus = "working"
	TaskStatusInputRequired TaskStatus = "input_required"
	TaskStatusCompleted     TaskStatus = "completed"
	TaskStatusFailed        TaskStatus = "failed"
	TaskStatusCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s is a final state: completed, failed or
// cancelled.
func (s TaskStatus) Terminal() bool {
	return s == TaskStatusCompleted || s == TaskStatusFailed || s == TaskStatusCancelled
}

// Task is the state of a task: a request the receiver runs in the
// background, polled with tasks/get and collected with tasks/result
// (2025-11-25).
type Task struct {
	TaskID        string     `json:"taskId"`
	Status        TaskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     string     `json:"createdAt"`     // ISO 8601
	LastUpdatedAt string     `json:"lastUpdatedAt"` // ISO 8601
	// TTL is how long the task is kept after its creation, in
	// milliseconds. It is always written; nil is written as null and means
	// unlimited.
	TTL          *int64 `json:"ttl"`
	PollInterval *int64 `json:"pollInterval,omitzero"` // suggested polling interval, in milliseconds
}

// CreateTaskResult is the result of a task-augmented request (one whose
// params hold "task"): the task created in place of the request's result
// (2025-11-25).
type CreateTaskResult struct {
	Task Task `json:"task"`
	Meta Meta `json:"_meta,omitempty"`
}

// getTaskParams are the params of tasks/get (2025-11-25).
type getTaskParams struct {
	TaskID string `json:"taskId"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// GetTaskResult is the result of tasks/get: the task's current state
// (2025-11-25).
type GetTaskResult struct {
	Task
	Meta Meta `json:"_meta,omitempty"`
}

// getTaskPayloadParams are the params of tasks/result, which waits for the
// task to finish and returns the result of the original request (e.g. a
// CallToolResult for tools/call), with metaRelatedTask in its _meta
// (2025-11-25).
type getTaskPayloadParams struct {
	TaskID string `json:"taskId"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// cancelTaskParams are the params of tasks/cancel (2025-11-25).
type cancelTaskParams struct {
	TaskID string `json:"taskId"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// CancelTaskResult is the result of tasks/cancel: the task's state after
// the cancellation (2025-11-25).
type CancelTaskResult struct {
	Task
	Meta Meta `json:"_meta,omitempty"`
}

// ListTasksResult is the result of tasks/list (2025-11-25), whose params
// are a cursor, as every list request's. Tasks is always written (an empty array when nil).
type ListTasksResult struct {
	Tasks      []*Task `json:"tasks"`
	NextCursor string  `json:"nextCursor,omitempty"`
	Meta       Meta    `json:"_meta,omitempty"`
}

// TaskStatusNotificationParams are the params of notifications/tasks/status:
// a task changed state (2025-11-25).
type TaskStatusNotificationParams struct {
	Task
	Meta Meta `json:"_meta,omitempty"`
}

// relatedTaskMetadata is the value of _meta[metaRelatedTask]: it ties a
// request, result or notification to a task (2025-11-25).
type relatedTaskMetadata struct {
	TaskID string `json:"taskId"`
}
