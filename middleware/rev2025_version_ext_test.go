//go:build !keel_omit2025

package middleware_test

import (
	"context"

	"github.com/keelmcp/keel/mcp"
)

// clientVersion is the revision the examples' and tests' clients ask
// for: the client's default (a 2025 revision, negotiated by initialize)
// when the 2025 rules are compiled in.
const clientVersion = ""

// sessionListChanged reports whether the tests' client hears of a changed
// tool list without subscribing: a 2025 session gets notifications/tools/list_changed.
const sessionListChanged = true

// clientCapabilities are what the tests' clients declare: nothing more
// than the client's default (2025-11-25 tasks need no extension).
var clientCapabilities mcp.ClientCapabilities

// startTask calls tool name as a 2025-11-25 task (task-augmented
// tools/call) and returns the task's id.
func startTask(ctx context.Context, c *mcp.Client, name string) (string, error) {
	created, err := c.CallToolAsTask(ctx, name, nil, 0)
	if err != nil {
		return "", err
	}
	return created.Task.TaskID, nil
}

// taskStatus returns the status of task id (tasks/get).
func taskStatus(ctx context.Context, c *mcp.Client, id string) (mcp.TaskStatus, error) {
	task, err := c.GetTask(ctx, id)
	if err != nil {
		return "", err
	}
	return task.Status, nil
}

// taskResult waits for the result of task id (tasks/result).
func taskResult(ctx context.Context, c *mcp.Client, id string) (*mcp.CallToolResult, error) {
	return c.TaskResult(ctx, id)
}
