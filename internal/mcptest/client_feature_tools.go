package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
)

// Names of the fake tools that exercise logging, progress and the requests
// a server sends its client. They are served only when named (NewTools, or
// the "tools" list of a transcript's server file), never by default.
const (
	// ToolLog sends one notifications/message per level in
	// {"levels": [...]} with Session.Log (logger "log", data "message at
	// <level>"); with {"slog": true} it also logs through mcp.ClientLogger
	// at debug, info, warn and error. Its text result is "logged".
	ToolLog = "log"
	// ToolProgress reports each value of {"steps": [...]} against
	// {"total": n} with {"message": s} and returns one outcome per step:
	// "ok", "not-increasing", "completed" or the error's text.
	ToolProgress = "progress"
	// ToolSample asks the client to sample: one user message
	// {"prompt": s}, maxTokens 100, {"includeContext": s}; {"tools": true}
	// adds a tool "lookup" and toolChoice auto. Its text result is the
	// model's text and name, "<text> (<model>)".
	ToolSample = "sample"
	// ToolElicit asks the client to elicit: {"mode": "form"} (default; a
	// form with a required string "name") or {"mode": "url", "url": s,
	// "elicitationId": s}, with {"message": s}. An accepted URL elicitation
	// is followed by notifications/elicitation/complete. Its text result is
	// the ElicitResult as JSON.
	ToolElicit = "elicit"
	// ToolRoots asks the client for its roots; its text result is them as
	// JSON.
	ToolRoots = "roots"
	// ToolAsk needs input (mcp.InputRequired): the user's name by
	// elicitation (key "name", a form with a required string "name") and,
	// with {"roots": true}, the client's roots (key "roots"); its state is
	// "asked". Once answered, its text result is "Hello, <name>!" (with
	// " (<n> roots)" when it asked for roots). A 2026-07-28 request gets an
	// input-required result; a legacy session is asked by the server.
	ToolAsk = "ask"
)

// ClientFeatureTools lists the tools above, sorted.
var ClientFeatureTools = []string{ToolAsk, ToolElicit, ToolLog, ToolProgress, ToolRoots, ToolSample}

type clientFeatureTool struct {
	def  *mcp.Tool
	call func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error)
}

var clientFeatureTools = map[string]clientFeatureTool{
	ToolLog: {&mcp.Tool{Name: ToolLog, Description: "Logs to the client.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"levels":{"type":"array","items":{"type":"string"}},"slog":{"type":"boolean"}}}`)}, callLog},
	ToolProgress: {&mcp.Tool{Name: ToolProgress, Description: "Reports progress.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"array","items":{"type":"number"}},"total":{"type":"number"},"message":{"type":"string"}}}`)}, callProgress},
	ToolSample: {&mcp.Tool{Name: ToolSample, Description: "Asks the client to sample its model.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"},"tools":{"type":"boolean"},"includeContext":{"type":"string"}}}`)}, callSample},
	ToolElicit: {&mcp.Tool{Name: ToolElicit, Description: "Asks the client to elicit information from the user.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string"},"message":{"type":"string"},"url":{"type":"string"},"elicitationId":{"type":"string"}}}`)}, callElicit},
	ToolRoots: {&mcp.Tool{Name: ToolRoots, Description: "Lists the client's roots.",
		InputSchema: json.RawMessage(`{"type":"object"}`)}, callRoots},
	ToolAsk: {&mcp.Tool{Name: ToolAsk, Description: "Asks for the user's name (and the client's roots) through input-required results.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"roots":{"type":"boolean"}}}`)}, callAsk},
}

func callAsk(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	var args struct {
		Roots bool `json:"roots"`
	}
	if err := jsonv2.Unmarshal(call.Arguments, &args); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, err.Error(), nil)
	}
	in := mcp.InputFromContext(ctx)
	need := map[string]mcp.InputRequest{}
	name, ok := in.Elicit("name")
	if !ok || name.Action != mcp.ElicitAccept {
		need["name"] = mcp.ElicitInput(mcp.ElicitParams{Message: "What is your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
	}
	roots, rok := in.Roots("roots")
	if args.Roots && !rok {
		need["roots"] = mcp.RootsInput()
	}
	if len(need) > 0 {
		return nil, mcp.InputRequired(need, []byte("asked"))
	}
	text := fmt.Sprintf("Hello, %v!", name.Content["name"])
	if args.Roots {
		text += fmt.Sprintf(" (%d roots)", len(roots.Roots))
	}
	return mcp.TextResult(text), nil
}

func sessionOf(ctx context.Context) (*mcp.Session, error) {
	ss := mcp.SessionFromContext(ctx)
	if ss == nil {
		return nil, errors.New("no session")
	}
	return ss, nil
}

// plain returns err as an INTERNAL StructuredError carrying its text, so
// that the tool answers with an isError result that shows it even when err
// is an *mcp.Error (a client's error response), which a tool would
// otherwise pass on as the JSON-RPC error of its own response. (A plain Go
// error's text would be masked.)
func plain(err error) error { return &mcp.StructuredError{Code: mcp.ErrInternal, Message: err.Error()} }

func callLog(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	var in struct {
		Levels []mcp.LoggingLevel `json:"levels"`
		Slog   bool               `json:"slog"`
	}
	if err := jsonv2.Unmarshal(call.Arguments, &in); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, err.Error(), nil)
	}
	ss, err := sessionOf(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range in.Levels {
		if err := ss.Log(ctx, l, "log", "message at "+string(l)); err != nil {
			return nil, err
		}
	}
	if in.Slog {
		log := mcp.ClientLogger(ctx)
		log.DebugContext(ctx, "slog debug")
		log.InfoContext(ctx, "slog info", "user", "ann", "n", 3)
		log.WarnContext(ctx, "slog warn", "ok", false)
		log.With("component", "db").WithGroup("query").ErrorContext(ctx, "slog error", "table", "users", "ms", 1.5)
	}
	return mcp.TextResult("logged"), nil
}

func callProgress(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	var in struct {
		Steps   []float64 `json:"steps"`
		Total   float64   `json:"total"`
		Message string    `json:"message"`
	}
	if err := jsonv2.Unmarshal(call.Arguments, &in); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, err.Error(), nil)
	}
	outcomes := make([]string, len(in.Steps))
	for i, s := range in.Steps {
		err := mcp.ReportProgress(ctx, s, in.Total, in.Message)
		switch {
		case err == nil:
			outcomes[i] = "ok"
		case errors.Is(err, mcp.ErrProgressNotIncreasing):
			outcomes[i] = "not-increasing"
		case errors.Is(err, mcp.ErrRequestCompleted):
			outcomes[i] = "completed"
		default:
			outcomes[i] = err.Error()
		}
	}
	return mcp.TextResult(strings.Join(outcomes, " ")), nil
}

func callSample(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	var in struct {
		Prompt         string `json:"prompt"`
		Tools          bool   `json:"tools"`
		IncludeContext string `json:"includeContext"`
	}
	if err := jsonv2.Unmarshal(call.Arguments, &in); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, err.Error(), nil)
	}
	ss, err := sessionOf(ctx)
	if err != nil {
		return nil, err
	}
	p := &mcp.CreateMessageParams{
		Messages:       []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText(in.Prompt)}}},
		MaxTokens:      100,
		IncludeContext: in.IncludeContext,
	}
	if in.Tools {
		p.Tools = []*mcp.Tool{{Name: "lookup", Description: "Looks a word up.", InputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`)}}
		p.ToolChoice = &mcp.ToolChoice{Mode: "auto"}
	}
	res, err := ss.CreateMessage(ctx, p)
	if err != nil {
		return nil, plain(err)
	}
	var text []string
	for _, c := range res.Content {
		switch c.Type {
		case mcp.ContentText:
			text = append(text, c.Text)
		case mcp.ContentToolUse:
			text = append(text, "tool_use "+c.Name+" "+string(c.Input))
		default:
			text = append(text, c.Type)
		}
	}
	return mcp.TextResult(fmt.Sprintf("%s (%s)", strings.Join(text, " "), res.Model)), nil
}

func callElicit(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	var in struct {
		Mode          string `json:"mode"`
		Message       string `json:"message"`
		URL           string `json:"url"`
		ElicitationID string `json:"elicitationId"`
	}
	if err := jsonv2.Unmarshal(call.Arguments, &in); err != nil {
		return nil, mcp.NewToolError(mcp.ErrInvalidArgument, err.Error(), nil)
	}
	ss, err := sessionOf(ctx)
	if err != nil {
		return nil, err
	}
	p := &mcp.ElicitParams{Mode: in.Mode, Message: in.Message, URL: in.URL, ElicitationID: in.ElicitationID}
	if in.Mode != mcp.ElicitModeURL {
		p.RequestedSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","title":"Name"}},"required":["name"]}`)
	}
	res, err := ss.Elicit(ctx, p)
	if err != nil {
		return nil, plain(err)
	}
	if in.Mode == mcp.ElicitModeURL && res.Action == mcp.ElicitAccept {
		if err := ss.NotifyElicitationComplete(ctx, in.ElicitationID); err != nil {
			return nil, plain(err)
		}
	}
	b, err := jsonv2.Marshal(res, jsonv2.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return mcp.TextResult(string(b)), nil
}

func callRoots(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
	ss, err := sessionOf(ctx)
	if err != nil {
		return nil, err
	}
	roots, err := ss.ListRoots(ctx)
	if err != nil {
		return nil, plain(err)
	}
	b, err := jsonv2.Marshal(roots, jsonv2.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return mcp.TextResult(string(b)), nil
}

// ClientFeatureConfig are the knobs of a transcript's server file for
// logging and the requests a server sends its client.
type ClientFeatureConfig struct {
	// Logging declares the logging capability (ServerOptions.Logging).
	Logging bool `json:"logging"`
	// LogLevel is ServerOptions.LogLevel.
	LogLevel mcp.LoggingLevel `json:"logLevel"`
	// RequestTimeoutMs is ServerOptions.RequestTimeout in milliseconds.
	RequestTimeoutMs int `json:"requestTimeoutMs"`
	// ListRootsOnChange makes the server answer
	// notifications/roots/list_changed with roots/list
	// (ServerOptions.OnRootsListChanged).
	ListRootsOnChange bool `json:"listRootsOnChange"`
}

func (c *ClientFeatureConfig) apply(o *mcp.ServerOptions) {
	o.Logging, o.LogLevel = c.Logging, c.LogLevel
	o.RequestTimeout = time.Duration(c.RequestTimeoutMs) * time.Millisecond
	if c.ListRootsOnChange {
		o.OnRootsListChanged = func(ctx context.Context, ss *mcp.Session) { _, _ = ss.ListRoots(ctx) }
	}
}
