package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Workflow statuses.
const (
	workflowActive = "active"
	workflowDraft  = "draft"
)

// workflow is a sequence of agent steps: the input goes to the first
// step's agent, each step's output to the next, the last one's is the
// workflow's output.
type workflow struct {
	ID, Name, Version, Status, Description string
	Steps                                  []workflowStep
	// Required lists the members the input must have.
	Required []string
}

type workflowStep struct {
	ID, Name, Agent, Description string
}

// workflows are the built-in workflows.
var workflows = []workflow{
	{
		ID: "echo", Name: "Echo", Version: "1.0.0", Status: workflowActive,
		Description: "Returns its input: one step through the echo agent",
		Steps:       []workflowStep{{ID: "echo", Name: "Echo", Agent: "echo", Description: "Pass the input through"}},
	},
	{
		ID: "summarize", Name: "Summarize text", Version: "1.0.0", Status: workflowActive,
		Description: "Summarizes input.text: words, sentences and its first sentence",
		Steps: []workflowStep{
			{ID: "intake", Name: "Intake", Agent: "echo", Description: "Take the input as is"},
			{ID: "summarize", Name: "Summarize", Agent: "summarizer", Description: "Count and summarize the text"},
		},
		Required: []string{"text"},
	},
	{
		ID: "plan-and-summarize", Name: "Plan and summarize", Version: "1.0.0", Status: workflowActive,
		Description: "Turns input.goal into a numbered plan, then summarizes the plan",
		Steps: []workflowStep{
			{ID: "plan", Name: "Plan", Agent: "planner", Description: "Split the goal into steps"},
			{ID: "summarize", Name: "Summarize", Agent: "summarizer", Description: "Summarize the plan"},
		},
		Required: []string{"goal"},
	},
	{
		ID: "release-review", Name: "Release review", Version: "0.1.0", Status: workflowDraft,
		Description: "Plans a release review (draft: listed, not runnable)",
		Steps: []workflowStep{
			{ID: "plan", Name: "Plan", Agent: "planner", Description: "Plan the review"},
			{ID: "record", Name: "Record", Agent: "echo", Description: "Record the plan"},
		},
		Required: []string{"goal"},
	},
}

func lookupWorkflow(id string) (*workflow, error) {
	for i := range workflows {
		if workflows[i].ID == id {
			return &workflows[i], nil
		}
	}
	return nil, mcp.NewToolError(mcp.ErrNotFound, fmt.Sprintf("workflow %q not found", id),
		map[string]any{"reason": "WORKFLOW_NOT_FOUND", "workflowId": id})
}

// inputSchema is the JSON Schema of the workflow's input.
func (w *workflow) inputSchema() map[string]any {
	props := map[string]any{}
	for _, r := range w.Required {
		props[r] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": props, "required": append([]string{}, w.Required...)}
}

// WorkflowRunInput is workflow_run's input.
type WorkflowRunInput struct {
	WorkflowID string         `json:"workflowId" jsonschema:"minLength=1,description=The ID of the workflow to execute"`
	Input      jsontext.Value `json:"input,omitzero" jsonschema:"type=object,description=Input of the first step"`
	SessionID  string         `json:"sessionId,omitempty" jsonschema:"description=Active session the steps run in"`
}

// StepResult is the outcome of one workflow step.
type StepResult struct {
	StepID     string  `json:"stepId"`
	AgentID    string  `json:"agentId"`
	Success    bool    `json:"success"`
	DurationMs float64 `json:"durationMs"`
}

// WorkflowError says why a workflow failed.
type WorkflowError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	StepID  string `json:"stepId,omitempty"`
}

// WorkflowRunOutput is workflow_run's result. A failed step is reported
// here (success false, error WORKFLOW_STEP_FAILED), not as a tool error.
type WorkflowRunOutput struct {
	Success         bool           `json:"success"`
	WorkflowID      string         `json:"workflowId"`
	TraceID         string         `json:"traceId,omitempty"`
	SessionID       string         `json:"sessionId,omitempty"`
	StepsCompleted  []string       `json:"stepsCompleted"`
	StepResults     []StepResult   `json:"stepResults"`
	Output          any            `json:"output,omitempty"`
	Error           *WorkflowError `json:"error,omitempty"`
	TotalDurationMs float64        `json:"totalDurationMs"`
}

// WorkflowListInput is workflow_list's input.
type WorkflowListInput struct {
	Status string `json:"status,omitempty" jsonschema:"enum=active,enum=inactive,enum=draft,description=Only workflows with this status"`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=10,description=Maximum number of workflows (default 10)"`
}

// WorkflowSummary is one workflow in workflow_list's result.
type WorkflowSummary struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	Status      string `json:"status"`
	Description string `json:"description"`
	StepCount   int    `json:"stepCount"`
}

// WorkflowListOutput is workflow_list's result.
type WorkflowListOutput struct {
	Workflows []WorkflowSummary `json:"workflows"`
	Total     int               `json:"total"`
}

// WorkflowIDInput is workflow_describe's input.
type WorkflowIDInput struct {
	WorkflowID string `json:"workflowId" jsonschema:"minLength=1,description=The ID of the workflow"`
}

// WorkflowStepInfo describes a step.
type WorkflowStepInfo struct {
	StepID      string `json:"stepId"`
	Name        string `json:"name"`
	Type        string `json:"type"`
	Agent       string `json:"agent"`
	Description string `json:"description,omitempty"`
}

// WorkflowDescribeOutput is workflow_describe's result.
type WorkflowDescribeOutput struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	Version     string             `json:"version"`
	Description string             `json:"description,omitempty"`
	Status      string             `json:"status"`
	Steps       []WorkflowStepInfo `json:"steps"`
	InputSchema map[string]any     `json:"inputSchema"`
}

// workflowRunner runs workflows through the coordinator's agents.
type workflowRunner struct {
	c      *agents.Coordinator
	traces *traceSink
}

func registerWorkflowTools(reg *registry.Registry, r *workflowRunner) {
	const module = "workflow"
	registry.MustRegister(reg, "workflow_run", "Runs a workflow: its steps run through agents in order, each step's output feeding the next.",
		r.run, &registry.ToolOptions{Title: "Run workflow", Module: module})
	registry.MustRegister(reg, "workflow_list", "Lists the workflows.",
		listWorkflows, &registry.ToolOptions{Title: "List workflows", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "workflow_describe", "Describes a workflow: its steps and input schema.",
		describeWorkflow, &registry.ToolOptions{Title: "Describe workflow", ReadOnly: true, Module: module})
}

func listWorkflows(_ context.Context, in WorkflowListInput) (WorkflowListOutput, error) {
	out := WorkflowListOutput{Workflows: []WorkflowSummary{}}
	limit := clampLimit(in.Limit, 10, 100)
	for _, w := range workflows {
		if in.Status != "" && w.Status != in.Status {
			continue
		}
		out.Total++
		if len(out.Workflows) < limit {
			out.Workflows = append(out.Workflows, WorkflowSummary{ID: w.ID, Name: w.Name, Version: w.Version,
				Status: w.Status, Description: w.Description, StepCount: len(w.Steps)})
		}
	}
	return out, nil
}

func describeWorkflow(_ context.Context, in WorkflowIDInput) (WorkflowDescribeOutput, error) {
	w, err := lookupWorkflow(in.WorkflowID)
	if err != nil {
		return WorkflowDescribeOutput{}, err
	}
	out := WorkflowDescribeOutput{ID: w.ID, Name: w.Name, Version: w.Version, Description: w.Description,
		Status: w.Status, Steps: []WorkflowStepInfo{}, InputSchema: w.inputSchema()}
	for _, s := range w.Steps {
		out.Steps = append(out.Steps, WorkflowStepInfo{StepID: s.ID, Name: s.Name, Type: "agent", Agent: s.Agent, Description: s.Description})
	}
	return out, nil
}

func (r *workflowRunner) run(ctx context.Context, in WorkflowRunInput) (WorkflowRunOutput, error) {
	w, err := lookupWorkflow(in.WorkflowID)
	if err != nil {
		return WorkflowRunOutput{}, err
	}
	if w.Status != workflowActive {
		return WorkflowRunOutput{}, mcp.NewToolError(mcp.ErrInvalidArgument, fmt.Sprintf("workflow %q is %s, not active", w.ID, w.Status),
			map[string]any{"reason": "WORKFLOW_NOT_ACTIVE", "workflowId": w.ID})
	}
	input := map[string]any{}
	if len(in.Input) > 0 {
		if err := json.Unmarshal(in.Input, &input); err != nil {
			return WorkflowRunOutput{}, mcp.NewToolError(mcp.ErrInvalidArgument, "input: "+err.Error(), nil)
		}
	}
	for _, req := range w.Required {
		if _, ok := input[req]; !ok {
			return WorkflowRunOutput{}, mcp.NewToolError(mcp.ErrInvalidArgument,
				fmt.Sprintf("workflow %q needs input.%s", w.ID, req),
				map[string]any{"reason": "WORKFLOW_VALIDATION_ERROR", "workflowId": w.ID, "missing": req})
		}
	}
	out := WorkflowRunOutput{WorkflowID: w.ID, SessionID: in.SessionID, StepsCompleted: []string{}, StepResults: []StepResult{}}
	if call := mcp.ToolCallFromContext(ctx); call != nil {
		out.TraceID = call.RunID
	}
	var meta map[string]string
	if in.SessionID != "" {
		meta = map[string]string{agents.MetaSessionID: in.SessionID}
	}
	start := time.Now()
	var data any = input
	for _, s := range w.Steps {
		t0 := time.Now()
		res, err := r.c.Send(ctx, s.Agent, agents.Message{Type: agents.RunMessageType, Payload: data, Meta: meta})
		d := time.Since(t0)
		r.traces.event(ctx, eventStep, s.ID, err, d, map[string]any{"agentId": s.Agent, "workflowId": w.ID})
		out.StepResults = append(out.StepResults, StepResult{StepID: s.ID, AgentID: s.Agent, Success: err == nil, DurationMs: ms(d.Nanoseconds())})
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return out, err
			}
			out.Error = &WorkflowError{Code: "WORKFLOW_STEP_FAILED", StepID: s.ID, Message: fmt.Sprintf("step %s (agent %s): %v", s.ID, s.Agent, stepMessage(err))}
			out.TotalDurationMs = ms(time.Since(start).Nanoseconds())
			return out, nil
		}
		out.StepsCompleted = append(out.StepsCompleted, s.ID)
		data = res
	}
	out.Success, out.Output = true, data
	out.TotalDurationMs = ms(time.Since(start).Nanoseconds())
	return out, nil
}

// stepMessage is the message of a step's error (without the agents:
// prefix or code for structured errors).
func stepMessage(err error) string {
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		return se.Message
	}
	var ae *agents.Error
	if errors.As(err, &ae) {
		return ae.StructuredError().Message
	}
	return err.Error()
}
