package mcp

import "encoding/json"

// Tool is a tool definition as listed by tools/list.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"` // 2025-06-18
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitzero"` // 2025-06-18
	Annotations  *ToolAnnotations `json:"annotations,omitzero"`  // 2025-03-26
	Icons        []Icon           `json:"icons,omitempty"`       // 2025-11-25
	Execution    *ToolExecution   `json:"execution,omitzero"`    // 2025-11-25
	Meta         Meta             `json:"_meta,omitempty"`
}

// ToolAnnotations are untrusted hints about a tool's behaviour (2025-03-26).
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitzero"`
	DestructiveHint *bool  `json:"destructiveHint,omitzero"`
	IdempotentHint  *bool  `json:"idempotentHint,omitzero"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitzero"`
}

// ToolExecution describes how a tool may be run (2025-11-25).
type ToolExecution struct {
	TaskSupport string `json:"taskSupport,omitempty"` // "forbidden" (default), "optional", "required"
}

// Task support values.
const (
	TaskForbidden = "forbidden"
	TaskOptional  = "optional"
	TaskRequired  = "required"
)

// ListToolsResult is the result of tools/list.
type ListToolsResult struct {
	Tools      []*Tool `json:"tools"`
	NextCursor string  `json:"nextCursor,omitempty"`
	Meta       Meta    `json:"_meta,omitempty"`
}

// CallToolParams are the params of tools/call.
type CallToolParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitzero"`
	Task      *TaskMetadata   `json:"task,omitzero"` // 2025-11-25
	// InputResponses and RequestState answer an input-required result
	// (2026-07-28; see InputRequiredError).
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string                     `json:"requestState,omitempty"`
	Meta           Meta                       `json:"_meta,omitempty"`
}

// TaskMetadata asks for a request to run as a task (2025-11-25).
type TaskMetadata struct {
	TTL *int64 `json:"ttl,omitzero"`
}

// CallToolResult is the result of tools/call. Content is always written (an
// empty array when nil).
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitzero"` // 2025-06-18
	IsError           bool            `json:"isError,omitzero"`
	Meta              Meta            `json:"_meta,omitempty"`
}

// TextResult returns a successful tool result holding one text block.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{{Type: ContentText, Text: text}}}
}
