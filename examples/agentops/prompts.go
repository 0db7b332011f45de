package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// The prompts: user-invoked templates that ask the
// model to use the tools. Unknown workflows and agents, and input that is
// not a JSON object, are invalid params.

// RunWorkflowArgs are run_workflow's arguments.
type RunWorkflowArgs struct {
	WorkflowID string `json:"workflowId" jsonschema:"description=The ID of the workflow to execute"`
	Input      string `json:"input,omitempty" jsonschema:"description=JSON input for the workflow"`
}

// AnalyzeTraceArgs are analyze_trace's arguments.
type AnalyzeTraceArgs struct {
	TraceID string `json:"traceId" jsonschema:"description=The ID of the trace to analyze"`
}

// SearchMemoryArgs are search_memory's arguments.
type SearchMemoryArgs struct {
	Query     string `json:"query" jsonschema:"description=What to search for"`
	Namespace string `json:"namespace,omitempty" jsonschema:"description=Namespace to search in"`
}

// ListAgentsArgs are list_agents' arguments.
type ListAgentsArgs struct {
	Team    string `json:"team,omitempty" jsonschema:"description=Only agents of this team"`
	Enabled string `json:"enabled,omitempty" jsonschema:"description=true or false: only enabled or disabled agents"`
}

// RunAgentArgs are run_agent's arguments.
type RunAgentArgs struct {
	AgentID string `json:"agentId" jsonschema:"description=The ID of the agent to run"`
	Input   string `json:"input,omitempty" jsonschema:"description=JSON input for the agent"`
}

func invalidParams(format string, a ...any) error {
	return &mcp.Error{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// checkObject reports input that is given but not a JSON object.
func checkObject(input string) error {
	if input == "" {
		return nil
	}
	v := jsontext.Value(input)
	if !v.IsValid() || v.Kind() != '{' {
		return invalidParams("input must be a JSON object, got %q", input)
	}
	return nil
}

func userPrompt(description, text string) *mcp.GetPromptResult {
	return &mcp.GetPromptResult{Description: description, Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Text(text))}}
}

func registerPrompts(reg *registry.Registry, c *agents.Coordinator) {
	workflowIDs := make([]string, len(workflows))
	for i, w := range workflows {
		workflowIDs[i] = w.ID
	}
	agentIDs := func() []string {
		var ids []string
		for _, st := range c.Agents() {
			ids = append(ids, st.ID)
		}
		return ids
	}

	registry.MustRegisterPrompt(reg, "run_workflow", "Execute a workflow with optional input",
		func(_ context.Context, a RunWorkflowArgs) (*mcp.GetPromptResult, error) {
			w, err := lookupWorkflow(a.WorkflowID)
			if err != nil {
				return nil, invalidParams("unknown workflow %q (have %s)", a.WorkflowID, strings.Join(workflowIDs, ", "))
			}
			if err := checkObject(a.Input); err != nil {
				return nil, err
			}
			input := a.Input
			if input == "" {
				input = "{}"
			}
			steps := make([]string, len(w.Steps))
			for i, s := range w.Steps {
				steps[i] = s.ID + " (" + s.Agent + ")"
			}
			return userPrompt("Execute the "+w.ID+" workflow", fmt.Sprintf(
				"Please execute the '%s' workflow with input: %s\nCall the workflow_run tool with workflowId %q. Its steps are: %s. Report the output, or the step that failed and why.",
				w.ID, input, w.ID, strings.Join(steps, " → "))), nil
		}, &registry.PromptOptions{Title: "Run Workflow", Complete: map[string]registry.Completer{
			"workflowId": registry.CompleteFrom(workflowIDs...),
		}})

	registry.MustRegisterPrompt(reg, "analyze_trace", "Analyze a trace for errors and slow steps",
		func(_ context.Context, a AnalyzeTraceArgs) (*mcp.GetPromptResult, error) {
			return userPrompt("Analyze trace "+a.TraceID, fmt.Sprintf(
				"Please analyze trace %q. Call trace_get with traceId %q to read its events, then trace_analyze with the same traceId. Explain what ran, what failed and what was slow, and recommend fixes.",
				a.TraceID, a.TraceID)), nil
		}, &registry.PromptOptions{Title: "Analyze Trace"})

	registry.MustRegisterPrompt(reg, "search_memory", "Search the stored memory",
		func(_ context.Context, a SearchMemoryArgs) (*mcp.GetPromptResult, error) {
			where := "all namespaces"
			if a.Namespace != "" {
				where = "namespace " + a.Namespace
			}
			return userPrompt("Search memory for "+a.Query, fmt.Sprintf(
				"Please search memory in %s for %q using the memory_search tool, then summarize the most recent matching entries.",
				where, a.Query)), nil
		}, &registry.PromptOptions{Title: "Search Memory"})

	registry.MustRegisterPrompt(reg, "list_agents", "List the available agents",
		func(_ context.Context, a ListAgentsArgs) (*mcp.GetPromptResult, error) {
			var filters []string
			if a.Team != "" {
				filters = append(filters, "team "+a.Team)
			}
			switch a.Enabled {
			case "":
			case "true", "false":
				filters = append(filters, "enabled="+a.Enabled)
			default:
				return nil, invalidParams("enabled must be true or false, got %q", a.Enabled)
			}
			what := "all agents"
			if len(filters) > 0 {
				what = "the agents with " + strings.Join(filters, " and ")
			}
			return userPrompt("List agents", fmt.Sprintf(
				"Please list %s using the agent_list tool, and describe what each one can do.", what)), nil
		}, &registry.PromptOptions{Title: "List Agents"})

	registry.MustRegisterPrompt(reg, "run_agent", "Execute an agent with input",
		func(_ context.Context, a RunAgentArgs) (*mcp.GetPromptResult, error) {
			st, ok := c.Agent(a.AgentID)
			if !ok {
				return nil, invalidParams("unknown agent %q (have %s)", a.AgentID, strings.Join(agentIDs(), ", "))
			}
			if err := checkObject(a.Input); err != nil {
				return nil, err
			}
			input := a.Input
			if input == "" {
				input = "{}"
			}
			return userPrompt("Run agent "+st.ID, fmt.Sprintf(
				"Please run the agent %q (%s) with input: %s\nCall the agent_run tool with agentId %q and report its output.",
				st.ID, st.Info.Description, input, st.ID)), nil
		}, &registry.PromptOptions{Title: "Run Agent"})
}
