package main

import (
	"context"
	"sync"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Diagnostic tools of the stateless revision (2026-07-28): a tool that
// refuses a request lacking a client capability (-32021), one that asks
// for an elicitation on its own call (never as a server-to-client request),
// one that logs (sent only when the request's _meta names a logLevel), and
// two that change the tool and prompt lists, so that subscriptions/listen
// streams receive list_changed notifications.

// Names of the tool and prompt the trigger tools add and remove.
const (
	dynamicTool   = "test_dynamic_tool"
	dynamicPrompt = "test_dynamic_prompt"
)

func registerStatelessTools(reg *registry.Registry) {
	registry.MustRegister(reg, "test_missing_capability",
		"Needs the client's sampling capability: without it the call is refused with -32021 (MissingRequiredClientCapability)",
		func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
			return needSampling(mcp.RequestFromContext(ctx).ClientCapabilities(), mcp.InputFromContext(ctx))
		}, readOnly)
	registry.MustRegister(reg, "test_streaming_elicitation",
		"Asks the user for a confirmation on the call's own response (an input-required result, never a request to the client)",
		func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
			return streamingElicitation(mcp.InputFromContext(ctx))
		}, readOnly)
	registry.MustRegister(reg, "test_logging_tool",
		"Sends three log messages while it runs (only to requests whose _meta sets a logLevel)", withLogging, readOnly)

	registry.MustRegister(reg, "test_custom_headers",
		"Echoes its arguments; region is mirrored in the Mcp-Param-Region header (x-mcp-header), which the server checks against the body",
		func(_ context.Context, in CustomHeaderArgs) (string, error) {
			return "region=" + in.Region + " query=" + in.Query, nil
		}, readOnly)

	t := &listToggler{reg: reg}
	registry.MustRegister(reg, "test_trigger_tool_change",
		"Adds the tool "+dynamicTool+", or removes it when present: the tool list changes",
		func(context.Context, NoArgs) (*mcp.CallToolResult, error) { return t.toggleTool() }, nil)
	registry.MustRegister(reg, "test_trigger_prompt_change",
		"Adds the prompt "+dynamicPrompt+", or removes it when present: the prompt list changes",
		func(context.Context, NoArgs) (*mcp.CallToolResult, error) { return t.togglePrompt() }, nil)
}

// needSampling refuses a request that did not declare sampling with
// -32021 naming {"sampling": {}}. Otherwise it asks the client's LLM a
// question (round 1) and answers with its reply (round 2).
func needSampling(caps mcp.ClientCapabilities, in *mcp.Input) (*mcp.CallToolResult, error) {
	if caps.Sampling == nil {
		return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}},
			"test_missing_capability needs the client's sampling capability")
	}
	r, ok := in.Sample(keySampling)
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keySampling: samplingRequest("Say hello", 20)}, nil)
	}
	return textResult("LLM response: " + sampledText(r)), nil
}

// streamingElicitation asks for a confirmation (round 1) and reports the
// answer (round 2). In a legacy session keel sends the elicitation/create
// request on the call's stream itself; in a modern request the question
// travels as an input-required result, so the response stream never holds
// a request.
func streamingElicitation(in *mcp.Input) (*mcp.CallToolResult, error) {
	r, ok := in.Elicit(keyConfirm)
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyConfirm: mcp.ElicitInput(mcp.ElicitParams{
			Message: "Do you want to continue?", RequestedSchema: formSchema("confirm", "boolean")})}, nil)
	}
	v, _ := field(r, "confirm")
	return textResult("Elicitation answered: action=" + r.Action + ", confirm=" + v), nil
}

// listToggler adds and removes the dynamic tool and prompt. The registry
// notifies its listeners (and so the server, which sends list_changed) on
// every change.
type listToggler struct {
	mu  sync.Mutex // one toggle at a time: check-then-act
	reg *registry.Registry
}

func (t *listToggler) toggleTool() (*mcp.CallToolResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reg.Remove(dynamicTool) {
		return textResult("Removed the tool " + dynamicTool), nil
	}
	err := registry.Register(t.reg, dynamicTool, "Appears and disappears with test_trigger_tool_change",
		func(context.Context, NoArgs) (string, error) { return "I come and go.", nil }, readOnly)
	if err != nil {
		return nil, err
	}
	return textResult("Added the tool " + dynamicTool), nil
}

func (t *listToggler) togglePrompt() (*mcp.CallToolResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reg.RemovePrompt(dynamicPrompt) {
		return textResult("Removed the prompt " + dynamicPrompt), nil
	}
	err := registry.RegisterPrompt(t.reg, dynamicPrompt, "Appears and disappears with test_trigger_prompt_change",
		func(context.Context, struct{}) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Text("I come and go."))}}, nil
		}, nil)
	if err != nil {
		return nil, err
	}
	return textResult("Added the prompt " + dynamicPrompt), nil
}

// CustomHeaderArgs are the arguments of test_custom_headers: region is
// annotated with x-mcp-header (SEP-2243), so a 2026-07-28 client over HTTP
// sends it as Mcp-Param-Region too.
type CustomHeaderArgs struct {
	Region string `json:"region" jsonschema_extras:"x-mcp-header=Region"`
	Query  string `json:"query,omitempty"`
}
