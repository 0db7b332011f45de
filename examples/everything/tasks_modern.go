package main

import (
	"context"
	"fmt"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Tasks (the io.modelcontextprotocol/tasks extension of revision
// 2026-07-28, and tasks of 2025-11-25): a tool registered with TaskSupport
// optional or required may run as a task when the request declares the
// extension. keel decides: a handler still running after a short while
// (mcp.TaskOptions.ImmediateWait) becomes a task, and a handler may become
// one at once with mcp.StartTask — which it must do before it returns
// mcp.InputRequired if the question is to park the task (input_required on
// tasks/get, answered with tasks/update) rather than answer the call
// directly. The fixtures are the ones the conformance suite's tasks-*
// scenarios name.

// Keys of the tasks fixtures' input requests.
const (
	keyConfirmDelete = "confirm_delete"
	keyFirst         = "first"
	keySecond        = "second"
)

// SlowArgs are the arguments of slow_compute.
type SlowArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"minimum=0,maximum=600,description=How long to compute (0: at once)"`
	Label   string  `json:"label,omitempty" jsonschema:"description=A label echoed in the result"`
}

// GreetArgs are the arguments of greet.
type GreetArgs struct {
	Name string `json:"name" jsonschema:"description=Who to greet"`
}

// DeleteArgs are the arguments of confirm_delete.
type DeleteArgs struct {
	Filename string `json:"filename" jsonschema:"description=The file to delete (nothing is deleted)"`
}

var (
	taskOptional = &registry.ToolOptions{ReadOnly: true, TaskSupport: mcp.TaskOptional}
	taskRequired = &registry.ToolOptions{ReadOnly: true, TaskSupport: mcp.TaskRequired}
)

func registerTaskTools(reg *registry.Registry) {
	registry.MustRegister(reg, "greet", "Greets someone at once (never a task)",
		func(_ context.Context, a GreetArgs) (*mcp.CallToolResult, error) {
			return textResult("Hello, " + a.Name + "!"), nil
		}, readOnly)
	registry.MustRegister(reg, "slow_compute", "Computes for `seconds` seconds: a task unless it is quick", slowCompute, taskOptional)
	registry.MustRegister(reg, "failing_job", "Fails after about a second with a tool error (isError); runs only as a task",
		func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.Text("failing_job failed, as it always does")}}, nil
		}, taskRequired)
	registry.MustRegister(reg, "protocol_error_job", "Becomes a task, then ends with a JSON-RPC error (the task fails)",
		func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
			mcp.StartTask(ctx)
			return nil, &mcp.Error{Code: mcp.CodeInternalError, Message: "Internal error: protocol_error_job always fails"}
		}, taskOptional)
	registry.MustRegister(reg, "confirm_delete", "Becomes a task that asks the user to confirm (an elicitation) before it 'deletes' the file",
		func(ctx context.Context, a DeleteArgs) (*mcp.CallToolResult, error) {
			mcp.StartTask(ctx)
			return confirmDelete(a.Filename, mcp.InputFromContext(ctx))
		}, taskOptional)
	registry.MustRegister(reg, "multi_input", "Becomes a task that asks two questions at once (two elicitations)",
		func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
			mcp.StartTask(ctx)
			return multiInput(mcp.InputFromContext(ctx))
		}, taskOptional)
	registry.MustRegister(reg, "test_tool_with_task", "Asks the user's name directly (input_required), then greets them as a task",
		func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
			in := mcp.InputFromContext(ctx)
			r, ok := in.Elicit(keyUserName)
			if !ok {
				return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyUserName: nameRequest}, nil)
			}
			mcp.StartTask(ctx)
			name, _ := field(r, "name")
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return nil, err
			}
			return textResult("Hello, " + name + "! (from a task)"), nil
		}, taskRequired)
}

// slowCompute sleeps the requested time (or until cancelled).
func slowCompute(ctx context.Context, a SlowArgs) (*mcp.CallToolResult, error) {
	if err := sleep(ctx, time.Duration(a.Seconds*float64(time.Second))); err != nil {
		return nil, err
	}
	return textResult(fmt.Sprintf("Computed %q in %gs", a.Label, a.Seconds)), nil
}

// confirmDelete asks for a confirmation (round 1) and reports the
// decision (round 2).
func confirmDelete(filename string, in *mcp.Input) (*mcp.CallToolResult, error) {
	r, ok := in.Elicit(keyConfirmDelete)
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyConfirmDelete: mcp.ElicitInput(mcp.ElicitParams{
			Message: "Delete " + filename + "?", RequestedSchema: formSchema("confirm", "boolean")})}, nil)
	}
	if r.Action == mcp.ElicitAccept && r.Content["confirm"] == true {
		return textResult("Deleted " + filename + " (not really)"), nil
	}
	return textResult("Kept " + filename), nil
}

// multiInput asks two questions in one round, and reports both answers.
func multiInput(in *mcp.Input) (*mcp.CallToolResult, error) {
	a, okA := in.Elicit(keyFirst)
	b, okB := in.Elicit(keySecond)
	if !okA || !okB {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{
			keyFirst:  mcp.ElicitInput(mcp.ElicitParams{Message: "First question: your name?", RequestedSchema: formSchema("name", "string")}),
			keySecond: mcp.ElicitInput(mcp.ElicitParams{Message: "Second question: confirm?", RequestedSchema: formSchema("confirm", "boolean")}),
		}, nil)
	}
	return textResult(fmt.Sprintf("first: %s, second: %s", a.Action, b.Action)), nil
}
