package mcp

import (
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Sampling-only content block types (2025-11-25).
const (
	ContentToolUse    = "tool_use"    // the model asks to call a tool
	ContentToolResult = "tool_result" // the result of a tool_use, sent back to the model
)

// SamplingContent is one content block of a sampling message
// (SamplingMessageContentBlock). Type selects which fields are meaningful:
//
//	text           Text
//	image, audio   Data (base64), MimeType
//	tool_use       ID, Name, Input (2025-11-25)
//	tool_result    ToolUseID, Content, StructuredContent, IsError (2025-11-25)
//
// Text, image and audio blocks may carry Annotations; every type may carry
// Meta. The wire form holds only the members of its type; required members
// are always written (a tool_use Input of nil is written as {}, a
// tool_result Content of nil as []).
type SamplingContent struct {
	Type              string
	Text              string
	Data              string // base64
	MimeType          string
	ID                string          // tool_use: identifies the use; tool_result.toolUseId refers to it
	Name              string          // tool_use: the tool's name
	Input             json.RawMessage // tool_use: the arguments, an object
	ToolUseID         string          // tool_result: ID of the tool_use answered
	Content           []Content       // tool_result: what the tool returned
	StructuredContent json.RawMessage // tool_result: optional structured result, an object
	IsError           bool            // tool_result: the tool failed
	Annotations       *Annotations
	Meta              Meta
}

type toolUseWire struct {
	Type  string         `json:"type"`
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input jsontext.Value `json:"input"`
	Meta  Meta           `json:"_meta,omitempty"`
}

type toolResultWire struct {
	Type              string         `json:"type"`
	ToolUseID         string         `json:"toolUseId"`
	Content           []Content      `json:"content"`
	StructuredContent jsontext.Value `json:"structuredContent,omitzero"`
	IsError           bool           `json:"isError,omitzero"`
	Meta              Meta           `json:"_meta,omitempty"`
}

var emptyToolInput = jsontext.Value("{}")

// marshalWire writes the wire form of the block for its Type.
func (c SamplingContent) marshalWire(enc *jsontext.Encoder) error {
	switch c.Type {
	case ContentText:
		return jsonv2.MarshalEncode(enc, &textWire{c.Type, c.Text, c.Annotations, c.Meta})
	case ContentImage, ContentAudio:
		return jsonv2.MarshalEncode(enc, &mediaWire{c.Type, c.Data, c.MimeType, c.Annotations, c.Meta})
	case ContentToolUse:
		in := c.Input
		if len(in) == 0 {
			in = json.RawMessage(emptyToolInput)
		}
		return jsonv2.MarshalEncode(enc, &toolUseWire{c.Type, c.ID, c.Name, jsontext.Value(in), c.Meta})
	case ContentToolResult:
		return jsonv2.MarshalEncode(enc, &toolResultWire{c.Type, c.ToolUseID, c.Content, jsontext.Value(c.StructuredContent), c.IsError, c.Meta})
	default:
		return fmt.Errorf("mcp: content block type %q is not allowed in a sampling message", c.Type)
	}
}

type samplingContentWire struct {
	Type              string         `json:"type"`
	Text              *string        `json:"text"`
	Data              *string        `json:"data"`
	MimeType          string         `json:"mimeType"`
	ID                *string        `json:"id"`
	Name              *string        `json:"name"`
	Input             jsontext.Value `json:"input"`
	ToolUseID         *string        `json:"toolUseId"`
	Content           []Content      `json:"content"`
	StructuredContent jsontext.Value `json:"structuredContent"`
	IsError           bool           `json:"isError"`
	Annotations       *Annotations   `json:"annotations"`
	Meta              Meta           `json:"_meta"`
}

// unmarshalWire reads one sampling content block and checks that the
// members its type requires are present.
func (c *SamplingContent) unmarshalWire(dec *jsontext.Decoder) error {
	var w samplingContentWire
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*c = SamplingContent{Type: w.Type, MimeType: w.MimeType, Annotations: w.Annotations, Meta: w.Meta}
	missing := func(member string) error { return missingMember(w.Type, member) }
	switch w.Type {
	case ContentText, ContentImage, ContentAudio:
		var err error
		c.Text, c.Data, err = decodeMediaMembers(w.Type, w.Text, w.Data, w.MimeType)
		if err != nil {
			return err
		}
	case ContentToolUse:
		switch {
		case w.ID == nil:
			return missing("id")
		case w.Name == nil:
			return missing("name")
		case w.Input == nil:
			return missing("input")
		}
		c.ID, c.Name, c.Input = *w.ID, *w.Name, json.RawMessage(w.Input)
	case ContentToolResult:
		switch {
		case w.ToolUseID == nil:
			return missing("toolUseId")
		case w.Content == nil:
			return missing("content")
		}
		c.ToolUseID, c.Content, c.StructuredContent, c.IsError = *w.ToolUseID, w.Content, json.RawMessage(w.StructuredContent), w.IsError
	default:
		return fmt.Errorf("mcp: content block type %q is not allowed in a sampling message", w.Type)
	}
	return nil
}

// SamplingText returns a text block for a sampling message.
func SamplingText(text string) SamplingContent {
	return SamplingContent{Type: ContentText, Text: text}
}

// SamplingMessageContent is the content of a sampling message: one block
// or, since 2025-11-25, an array of blocks. It is written as a single block
// when it holds exactly one (the only form revisions before 2025-11-25
// accept) and as an array otherwise; both forms are read.
type SamplingMessageContent []SamplingContent

// marshalWire writes one block as an object and any other number as an
// array.
func (s SamplingMessageContent) marshalWire(enc *jsontext.Encoder) error {
	if len(s) == 1 {
		return s[0].marshalWire(enc)
	}
	if s == nil {
		s = SamplingMessageContent{}
	}
	return jsonv2.MarshalEncode(enc, []SamplingContent(s))
}

// unmarshalWire reads a single block or an array of blocks.
func (s *SamplingMessageContent) unmarshalWire(dec *jsontext.Decoder) error {
	if dec.PeekKind() == '{' {
		var c SamplingContent
		if err := c.unmarshalWire(dec); err != nil {
			return err
		}
		*s = SamplingMessageContent{c}
		return nil
	}
	var list []SamplingContent
	if err := jsonv2.UnmarshalDecode(dec, &list); err != nil {
		return err
	}
	if list == nil {
		return fmt.Errorf("mcp: sampling message content is null")
	}
	*s = list
	return nil
}

// SamplingMessage is one message of a sampling conversation.
type SamplingMessage struct {
	Role    Role                   `json:"role"`
	Content SamplingMessageContent `json:"content"`
	Meta    Meta                   `json:"_meta,omitempty"` // 2025-11-25
}

// Values of CreateMessageParams.IncludeContext.
const (
	includeContextNone       = "none"       // the default
	includeContextThisServer = "thisServer" // soft-deprecated in 2025-11-25
	includeContextAllServers = "allServers" // soft-deprecated in 2025-11-25
)

// ModelPreferences are the server's preferences for the model the client
// samples with. Priorities range from 0 to 1; hints are tried in order.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitzero"`
	SpeedPriority        *float64    `json:"speedPriority,omitzero"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitzero"`
}

// ModelHint suggests a model: Name is matched as a substring of model
// names (e.g. "claude-3-5-sonnet", "sonnet", "claude").
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// Values of ToolChoice.Mode (2025-11-25).
const (
	toolChoiceAuto     = "auto"     // the model decides (the default)
	toolChoiceRequired = "required" // the model must use at least one tool
	toolChoiceNone     = "none"     // the model must not use tools
)

// ToolChoice controls how the model uses the tools of a sampling request
// (2025-11-25). An empty ToolChoice is written as {} and means auto.
type ToolChoice struct {
	Mode string `json:"mode,omitempty"`
}

// CreateMessageParams are the params of sampling/createMessage.
type CreateMessageParams struct {
	Messages         []SamplingMessage `json:"messages"`
	ModelPreferences *ModelPreferences `json:"modelPreferences,omitzero"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"` // IncludeContext...; other than none needs sampling.context
	Temperature      *float64          `json:"temperature,omitzero"`
	MaxTokens        int64             `json:"maxTokens"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	Metadata         map[string]any    `json:"metadata,omitempty"`  // provider-specific, passed through to the LLM provider
	Tools            []*Tool           `json:"tools,omitempty"`     // 2025-11-25; needs sampling.tools
	ToolChoice       *ToolChoice       `json:"toolChoice,omitzero"` // 2025-11-25; needs sampling.tools
	Task             *TaskMetadata     `json:"task,omitzero"`       // 2025-11-25
	Meta             Meta              `json:"_meta,omitempty"`
}

// Standard values of CreateMessageResult.StopReason, an open string.
const (
	stopReasonEndTurn      = "endTurn"
	stopReasonStopSequence = "stopSequence"
	stopReasonMaxTokens    = "maxTokens"
	stopReasonToolUse      = "toolUse" // 2025-11-25
)

// CreateMessageResult is the result of sampling/createMessage: the message
// the model produced.
type CreateMessageResult struct {
	Role       Role                   `json:"role"`
	Content    SamplingMessageContent `json:"content"`
	Model      string                 `json:"model"`
	StopReason string                 `json:"stopReason,omitempty"`
	Meta       Meta                   `json:"_meta,omitempty"`
}
