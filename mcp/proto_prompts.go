package mcp

import "encoding/json"

// Role is the sender or recipient of a message in a conversation.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Prompt is a prompt or prompt template a server offers, as listed by
// prompts/list.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"` // 2025-06-18
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"` // 2025-11-25
	Meta        Meta             `json:"_meta,omitempty"` // 2025-06-18
}

// PromptArgument describes one argument a prompt template accepts.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"` // 2025-06-18
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitzero"`
}

// PromptMessage is one message of a prompt: a role and one content block
// (text, image, audio, resource_link or resource).
type PromptMessage struct {
	Role    Role    `json:"role"`
	Content Content `json:"content"`
}

// ListPromptsResult is the result of prompts/list. Prompts is always written
// (an empty array when nil).
type ListPromptsResult struct {
	Prompts    []*Prompt `json:"prompts"`
	NextCursor string    `json:"nextCursor,omitempty"`
	Meta       Meta      `json:"_meta,omitempty"`
}

// GetPromptParams are the params of prompts/get.
type GetPromptParams struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
	// InputResponses and RequestState answer an input-required result
	// (2026-07-28; see InputRequiredError).
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string                     `json:"requestState,omitempty"`
	Meta           Meta                       `json:"_meta,omitempty"`
}

// GetPromptResult is the result of prompts/get. Messages is always written
// (an empty array when nil).
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        Meta            `json:"_meta,omitempty"`
}
