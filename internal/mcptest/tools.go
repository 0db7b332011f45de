package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
)

// Names of the fake tools, sorted.
const (
	ToolBoom        = "boom"        // returns a plain error: an INTERNAL isError result
	ToolEcho        = "echo"        // {"message": string} → one text block equal to message
	ToolEchoArgs    = "echo_args"   // returns its raw arguments as text (shows _meta never reaches them)
	ToolFail        = "fail"        // returns a StructuredError INVALID_ARGUMENT
	ToolPanic       = "panic"       // panics: the server recovers with an INTERNAL isError result
	ToolSlow        = "slow"        // blocks until its context ends
	ToolStructured  = "structured"  // structuredContent + text JSON + audio + resource_link
	ToolUnencodable = "unencodable" // a result that cannot be encoded: -32603
)

// AllTools lists every fake tool name, sorted.
var AllTools = []string{ToolBoom, ToolEcho, ToolEchoArgs, ToolFail, ToolPanic, ToolSlow, ToolStructured, ToolUnencodable}

// StructuredOutput is what the structured tool returns as structuredContent.
type StructuredOutput struct {
	Temperature float64 `json:"temperature"`
	Unit        string  `json:"unit"`
}

var bools = [2]bool{false, true}

func toolDef(name string) *mcp.Tool {
	if t, ok := clientFeatureTools[name]; ok { // client_feature_tools.go
		return t.def
	}
	obj := func(s string) jsontext.Value { return jsontext.Value(s) }
	switch name {
	case ToolEcho:
		return &mcp.Tool{Name: name, Description: "Echoes message.",
			InputSchema: json.RawMessage(obj(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}`))}
	case ToolStructured:
		return &mcp.Tool{Name: name, Title: "Structured weather", Description: "Returns structured content, audio and a resource link.",
			InputSchema:  json.RawMessage(obj(`{"type":"object","additionalProperties":false}`)),
			OutputSchema: json.RawMessage(obj(`{"type":"object","properties":{"temperature":{"type":"number"},"unit":{"type":"string"}},"required":["temperature","unit"]}`)),
			Annotations:  &mcp.ToolAnnotations{Title: "Weather", ReadOnlyHint: &bools[1]},
			Icons:        []mcp.Icon{{Src: "https://example.com/weather.png", MimeType: "image/png"}},
			Execution:    &mcp.ToolExecution{TaskSupport: mcp.TaskForbidden},
			Meta:         mcp.Meta{"example.com/owner": "tests"}}
	case ToolSlow:
		return &mcp.Tool{Name: name, Description: "Blocks until cancelled.", InputSchema: json.RawMessage(obj(`{"type":"object"}`))}
	default:
		return &mcp.Tool{Name: name, Description: "Test tool " + name + ".", InputSchema: json.RawMessage(obj(`{"type":"object"}`))}
	}
}

// Tools is a fake mcp.ToolSource serving a chosen subset of the fake tools
// (see the Tool* constants). Its channels, when set (buffered, or drained
// by the test), report what the slow tool observes.
type Tools struct {
	defs []*mcp.Tool

	// SlowStarted, if not nil, receives each slow call once it runs.
	SlowStarted chan *mcp.ToolCall
	// SlowDone, if not nil, receives the context error each slow call
	// observed when its context ended (proof that the server cancelled it).
	SlowDone chan error
}

// NewTools returns a fake ToolSource serving the named tools (all of them
// when none are named). Unknown names panic.
func NewTools(names ...string) *Tools {
	if len(names) == 0 {
		names = AllTools
	}
	names = slices.Clone(names)
	slices.Sort(names)
	t := &Tools{}
	for _, n := range slices.Compact(names) {
		if !slices.Contains(AllTools, n) && clientFeatureTools[n].def == nil {
			panic("mcptest: unknown fake tool " + n)
		}
		t.defs = append(t.defs, toolDef(n))
	}
	return t
}

// ListTools implements mcp.ToolSource.
func (t *Tools) ListTools(context.Context) ([]*mcp.Tool, error) { return t.defs, nil }

func (t *Tools) has(name string) bool {
	return slices.ContainsFunc(t.defs, func(d *mcp.Tool) bool { return d.Name == name })
}

// CallTool implements mcp.ToolSource.
func (t *Tools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if !t.has(call.Name) {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: unknown tool " + quote(call.Name),
			Data: &mcp.StructuredError{Code: mcp.ErrNotFound, Message: "tool " + quote(call.Name) + " not found", Details: map[string]any{"tool": call.Name}}}
	}
	if t, ok := clientFeatureTools[call.Name]; ok { // client_feature_tools.go
		return t.call(ctx, call)
	}
	switch call.Name {
	case ToolEcho:
		var in struct {
			Message *string `json:"message"`
		}
		if err := jsonv2.Unmarshal(call.Arguments, &in); err != nil || in.Message == nil {
			return nil, mcp.NewToolError(mcp.ErrInvalidArgument, "message (a string) is required", nil)
		}
		return mcp.TextResult(*in.Message), nil
	case ToolEchoArgs:
		return mcp.TextResult(string(call.Arguments)), nil
	case ToolFail:
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, "fail always fails", map[string]any{"reason": "requested", "tool": ToolFail})
	case ToolBoom:
		return nil, errors.New("boom: something broke")
	case ToolPanic:
		panic("panic tool panicked")
	case ToolSlow:
		if t.SlowStarted != nil {
			t.SlowStarted <- call
		}
		<-ctx.Done()
		if t.SlowDone != nil {
			t.SlowDone <- ctx.Err()
		}
		return nil, fmt.Errorf("slow: %w", ctx.Err())
	case ToolStructured:
		out := StructuredOutput{Temperature: 21.5, Unit: "C"}
		b, err := jsonv2.Marshal(out, jsonv2.Deterministic(true))
		if err != nil {
			return nil, err
		}
		size := int64(12)
		return &mcp.CallToolResult{
			Content: []mcp.Content{
				mcp.Text(string(b)),
				{Type: mcp.ContentAudio, Data: "UklGRiQAAABXQVZF", MimeType: "audio/wav"},
				{Type: mcp.ContentResourceLink, URI: "file:///reports/weather.txt", Name: "weather.txt", MimeType: "text/plain", Size: &size},
			},
			StructuredContent: b,
		}, nil
	case ToolUnencodable:
		return &mcp.CallToolResult{Content: []mcp.Content{{Type: "hologram"}}}, nil
	}
	return nil, errors.New("unreachable")
}

func quote(s string) string {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		return `"?"`
	}
	return string(b)
}
