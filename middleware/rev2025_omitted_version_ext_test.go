//go:build keel_omit2025

package middleware_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelmcp/keel/mcp"
)

// clientVersion is the revision the examples' and tests' clients ask
// for: built with keel_omit2025 the server serves 2026-07-28 only.
const clientVersion = mcp.Version20260728

// sessionListChanged reports whether the tests' client hears of a changed
// tool list without subscribing: a 2026-07-28 client outside a subscriptions/listen stream gets none.
const sessionListChanged = false

// clientCapabilities are what the tests' clients declare: the tasks
// extension, so that a tool may answer with a task.
var clientCapabilities = mcp.ClientCapabilities{Extensions: map[string]any{mcp.ExtensionTasks: map[string]any{}}}

// startTask calls tool name, whose handler makes a task of the call
// (mcp.StartTask), and returns the task's id.
func startTask(ctx context.Context, c *mcp.Client, name string) (string, error) {
	_, err := c.CallTool(ctx, name, nil)
	var started *mcp.TaskStartedError
	switch {
	case errors.As(err, &started):
		return started.Task.TaskID, nil
	case err == nil:
		return "", fmt.Errorf("tools/call %s was answered without a task", name)
	}
	return "", err
}

// taskStatus returns the status of task id (tasks/get).
func taskStatus(ctx context.Context, c *mcp.Client, id string) (mcp.TaskStatus, error) {
	task, err := c.PollTask(ctx, id)
	if err != nil {
		return "", err
	}
	return task.Status, nil
}

// taskResult waits for the result of task id (polling tasks/get).
func taskResult(ctx context.Context, c *mcp.Client, id string) (*mcp.CallToolResult, error) {
	return c.WaitTask(ctx, id)
}
