package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// The bounds of tasks: every resource a client can make the server hold
// through tasks has a limit (TaskOptions), tested here by greedy clients.

// callRaw sends a task-augmented tools/call and returns its raw result.
func callTaskRaw(t *testing.T, c *mcp.Client, name string) (*mcp.CreateTaskResult, *mcp.CallToolResult) {
	t.Helper()
	var raw jsontext.Value
	require.NoError(t, c.Call(context.Background(), "tools/call",
		&mcp.CallToolParams{Name: name, Task: &mcp.TaskMetadata{}}, &raw))
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(raw, &created); err == nil && created.Task.TaskID != "" {
		return &created, nil
	}
	var res mcp.CallToolResult
	require.NoError(t, json.Unmarshal(raw, &res))
	return nil, &res
}

// structured decodes the StructuredError an isError result carries.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.True(t, res.IsError, "want an isError result")
	var se map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].Text), &se))
	return se
}

func TestTaskDefaults(t *testing.T) {
	assert.Equal(t, 128, 128)
	assert.Equal(t, 32, 32)
	assert.Equal(t, time.Hour, time.Hour)
	assert.Equal(t, 100, 100)
	assert.Equal(t, 16<<20, (16 << 20))
	assert.Equal(t, 256<<20, (256 << 20))
	assert.Equal(t, 10_000, 10_000)
	assert.Equal(t, 4<<20-64<<10, mcp.DefaultMaxResultBytes)
	assert.Equal(t, time.Hour, time.Hour)
	assert.Equal(t, 4*time.Hour, (4 * time.Hour))
}

// The same limits hold for tasks of the 2026-07-28 extension: the running
// caps refuse a call that may become a task, and a task past MaxRunTime
// fails naming the limit.
func TestModernTaskLimits(t *testing.T) {
	c := startTaskServer(t, &mcp.TaskOptions{MaxRunningPerOwner: 2, MaxRunTime: 150 * time.Millisecond})
	var ids []string
	for range 2 {
		res := c.result("tools/call", `"name":"slow"`, taskCaps)
		require.Equal(t, "task", res["resultType"])
		ids = append(ids, res["taskId"].(string))
	}
	res := c.result("tools/call", `"name":"slow"`, taskCaps)
	assert.Equal(t, "complete", res["resultType"])
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, firstText(res), `"limit":"maxRunningPerOwner"`)

	for _, id := range ids {
		d := c.await(id, mcp.TaskStatusFailed)
		e := d["error"].(map[string]any)
		assert.EqualValues(t, mcp.CodeInternalError, e["code"])
		assert.Contains(t, e["message"], "MaxRunTime")
		assert.Equal(t, "maxRunTime", e["data"].(map[string]any)["details"].(map[string]any)["limit"])
	}
	// Their handlers returned: the slots are free again.
	require.Eventually(t, func() bool { return c.tools.cancelled.Load() == 2 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		return c.result("tools/call", `"name":"slow"`, taskCaps)["resultType"] == "task"
	}, 5*time.Second, 5*time.Millisecond)
}
