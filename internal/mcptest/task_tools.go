package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
)

// Names of the fake tools that run as tasks (2025-11-25): each declares an
// execution.taskSupport. Like the client feature tools they are served only
// when named.
const (
	// ToolTaskEcho (optional) returns {"message": s} as text.
	ToolTaskEcho = "task_echo"
	// ToolTaskRequired (required) returns "done".
	ToolTaskRequired = "task_required"
	// ToolTaskFail (optional) returns an INVALID_ARGUMENT StructuredError:
	// an isError result, so its task fails.
	ToolTaskFail = "task_fail"
	// ToolTaskRPCError (optional) returns a JSON-RPC error (-32602), which
	// tasks/result returns as is.
	ToolTaskRPCError = "task_rpc_error"
	// ToolTaskWait (optional) blocks until its context ends (tasks/cancel,
	// the ttl, the end of the session).
	ToolTaskWait = "task_wait"
	// ToolTaskElicit (optional) is ToolElicit: the task is input_required
	// while the client answers.
	ToolTaskElicit = "task_elicit"
	// ToolTaskProgress (optional) is ToolProgress: its notifications carry
	// the related-task _meta.
	ToolTaskProgress = "task_progress"
	// ToolTaskLog (optional) is ToolLog: its log messages carry the
	// related-task _meta.
	ToolTaskLog = "task_log"
)

// TaskTools lists the tools above, sorted.
var TaskTools = []string{ToolTaskEcho, ToolTaskElicit, ToolTaskFail, ToolTaskLog, ToolTaskProgress, ToolTaskRequired, ToolTaskRPCError, ToolTaskWait}

func taskTool(name, support, description, schema string, call func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error)) clientFeatureTool {
	return clientFeatureTool{&mcp.Tool{Name: name, Description: description, InputSchema: json.RawMessage(schema),
		Execution: &mcp.ToolExecution{TaskSupport: support}}, call}
}

func init() {
	obj := `{"type":"object"}`
	for _, t := range []clientFeatureTool{
		taskTool(ToolTaskEcho, mcp.TaskOptional, "Echoes message, as a task or not.",
			`{"type":"object","properties":{"message":{"type":"string"}}}`,
			func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
				var in struct {
					Message string `json:"message"`
				}
				if err := jsonv2.Unmarshal(call.Arguments, &in); err != nil {
					return nil, mcp.NewToolError(mcp.ErrInvalidArgument, err.Error(), nil)
				}
				return mcp.TextResult(in.Message), nil
			}),
		taskTool(ToolTaskRequired, mcp.TaskRequired, "Runs only as a task.", obj,
			func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) { return mcp.TextResult("done"), nil }),
		taskTool(ToolTaskFail, mcp.TaskOptional, "Always fails.", obj,
			func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
				return nil, mcp.NewToolError(mcp.ErrInvalidArgument, "task_fail always fails", map[string]any{"reason": "requested"})
			}),
		taskTool(ToolTaskRPCError, mcp.TaskOptional, "Fails with a JSON-RPC error.", obj,
			func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
				return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: no widget"}
			}),
		taskTool(ToolTaskWait, mcp.TaskOptional, "Blocks until cancelled.", obj,
			func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
				<-ctx.Done()
				return nil, fmt.Errorf("task_wait: %w", ctx.Err())
			}),
		taskTool(ToolTaskElicit, mcp.TaskOptional, "Asks the client to elicit information, as a task.",
			jsontext.Value(clientFeatureTools[ToolElicit].def.InputSchema).String(), callElicit),
		taskTool(ToolTaskProgress, mcp.TaskOptional, "Reports progress, as a task.",
			jsontext.Value(clientFeatureTools[ToolProgress].def.InputSchema).String(), callProgress),
		taskTool(ToolTaskLog, mcp.TaskOptional, "Logs to the client, as a task.",
			jsontext.Value(clientFeatureTools[ToolLog].def.InputSchema).String(), callLog),
	} {
		clientFeatureTools[t.def.Name] = t
	}
}

// TasksConfig is the "tasks" member of a transcript's server file: it sets
// ServerOptions.Tasks, with task ids "task-1", "task-2", ...
type TasksConfig struct {
	TTLMs          int64 `json:"ttlMs"`
	MaxTTLMs       int64 `json:"maxTtlMs"`
	PollIntervalMs int64 `json:"pollIntervalMs"`
	MaxTasks       int   `json:"maxTasks"`
}

func (c *TasksConfig) apply(o *mcp.ServerOptions) {
	if c == nil {
		return
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	o.Tasks = &mcp.TaskOptions{TTL: ms(c.TTLMs), MaxTTL: ms(c.MaxTTLMs), PollInterval: ms(c.PollIntervalMs),
		MaxTasks: c.MaxTasks, NewID: SequentialIDs("task-")}
}
