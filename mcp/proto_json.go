package mcp

import (
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The protocol types whose wire form is not their Go fields as tagged (a
// content block writes only the members of its type, a sampling message
// holds one block or an array, ...) write and read it in one place each:
// their marshalWire and unmarshalWire methods. keel's codec calls those
// directly (registered below); encoding/json reaches the same methods
// through MarshalJSON and UnmarshalJSON, so both print the same bytes.
type (
	wireMarshaler   interface{ marshalWire(*jsontext.Encoder) error }
	wireUnmarshaler interface{ unmarshalWire(*jsontext.Decoder) error }
)

func init() {
	jsonrpc.RegisterFieldShaped(taggedTypes...)
	jsonrpc.RegisterArshalers(
		jsonv2.JoinMarshalers(append(customMarshalers, taggedMarshalers...)...),
		jsonv2.JoinUnmarshalers(append(customUnmarshalers, taggedUnmarshalers...)...))
}

// wireMarshal and wireUnmarshal make the arshalers of one type. They are
// typed (not one arshaler for the interface): a value is then handed over
// by its address, where the interface form would box it on every call.
func wireMarshal[T any, P interface {
	*T
	wireMarshaler
}]() *jsonv2.Marshalers {
	return jsonv2.MarshalToFunc(func(enc *jsontext.Encoder, v P) error { return v.marshalWire(enc) })
}

func wireUnmarshal[T any, P interface {
	*T
	wireUnmarshaler
}]() *jsonv2.Unmarshalers {
	return jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v P) error { return v.unmarshalWire(dec) })
}

var (
	customMarshalers = []*jsonv2.Marshalers{wireMarshal[Content](), wireMarshal[CompleteReference](),
		wireMarshal[ElicitParams](), wireMarshal[SamplingContent](), wireMarshal[SamplingMessageContent]()}
	customUnmarshalers = []*jsonv2.Unmarshalers{wireUnmarshal[Content](), wireUnmarshal[CompleteReference](),
		wireUnmarshal[ElicitParams](), wireUnmarshal[SamplingContent](), wireUnmarshal[SamplingMessageContent]()}
)

// MarshalJSON returns the wire form of the block: only the members of its
// Type, as keel writes it in a message.
func (c Content) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&c) }

// UnmarshalJSON reads one content block, requiring the members its type
// requires, as keel reads a message.
func (c *Content) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, c) }

// MarshalJSON returns the wire form of the reference: only the members of
// its Type.
func (r CompleteReference) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&r) }

// UnmarshalJSON reads a reference, requiring the members its type requires.
func (r *CompleteReference) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, r) }

// MarshalJSON returns the wire form of the params: only the members of
// their Mode.
func (p ElicitParams) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&p) }

// UnmarshalJSON reads elicitation params, requiring the members their mode
// requires.
func (p *ElicitParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, p) }

// MarshalJSON returns the wire form of the block: only the members of its
// Type.
func (c SamplingContent) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&c) }

// UnmarshalJSON reads one sampling content block, requiring the members its
// type requires.
func (c *SamplingContent) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, c) }

// MarshalJSON returns the wire form of the content: one block as an object,
// any other number as an array.
func (s SamplingMessageContent) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&s) }

// UnmarshalJSON reads a single block or an array of blocks.
func (s *SamplingMessageContent) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, s) }

// taggedMarshalers and taggedUnmarshalers are the arshalers of the types
// above, registered with keel's codec.
var (
	taggedMarshalers = []*jsonv2.Marshalers{
		wireMarshal[CallToolResult](),
		wireMarshal[CompleteResult](),
		wireMarshal[Completion](),
		wireMarshal[CreateMessageParams](),
		wireMarshal[DiscoverResult](),
		wireMarshal[ElicitationSchema](),
		wireMarshal[GetPromptResult](),
		wireMarshal[ListPromptsResult](),
		wireMarshal[ListResourceTemplatesResult](),
		wireMarshal[ListResourcesResult](),
		wireMarshal[ListRootsResult](),
		wireMarshal[ListTasksResult](),
		wireMarshal[ListToolsResult](),
		wireMarshal[ReadResourceResult](),
		wireMarshal[UnsupportedVersionData](),
	}
	taggedUnmarshalers = []*jsonv2.Unmarshalers{
		wireUnmarshal[Annotations](),
		wireUnmarshal[CallToolParams](),
		wireUnmarshal[CallToolResult](),
		wireUnmarshal[CancelTaskResult](),
		wireUnmarshal[ClientCapabilities](),
		wireUnmarshal[ClientTaskRequestsCapability](),
		wireUnmarshal[ClientTasksCapability](),
		wireUnmarshal[CompleteArgument](),
		wireUnmarshal[CompleteContext](),
		wireUnmarshal[CompleteParams](),
		wireUnmarshal[CompleteResult](),
		wireUnmarshal[Completion](),
		wireUnmarshal[CreateMessageParams](),
		wireUnmarshal[CreateMessageResult](),
		wireUnmarshal[CreateTaskResult](),
		wireUnmarshal[DetailedTask](),
		wireUnmarshal[DiscoverResult](),
		wireUnmarshal[ElicitResult](),
		wireUnmarshal[ElicitationCapability](),
		wireUnmarshal[ElicitationSchema](),
		wireUnmarshal[EnumItems](),
		wireUnmarshal[EnumOption](),
		wireUnmarshal[GetPromptParams](),
		wireUnmarshal[GetPromptResult](),
		wireUnmarshal[GetTaskResult](),
		wireUnmarshal[Icon](),
		wireUnmarshal[Implementation](),
		wireUnmarshal[InitializeResult](),
		wireUnmarshal[InputRequest](),
		wireUnmarshal[ListChangedCapability](),
		wireUnmarshal[ListPromptsResult](),
		wireUnmarshal[ListResourceTemplatesResult](),
		wireUnmarshal[ListResourcesResult](),
		wireUnmarshal[ListRootsResult](),
		wireUnmarshal[ListTasksResult](),
		wireUnmarshal[ListToolsResult](),
		wireUnmarshal[LoggingMessageNotificationParams](),
		wireUnmarshal[ModelHint](),
		wireUnmarshal[ModelPreferences](),
		wireUnmarshal[PrimitiveSchema](),
		wireUnmarshal[ProgressParams](),
		wireUnmarshal[Prompt](),
		wireUnmarshal[PromptArgument](),
		wireUnmarshal[PromptMessage](),
		wireUnmarshal[ReadResourceParams](),
		wireUnmarshal[ReadResourceResult](),
		wireUnmarshal[Resource](),
		wireUnmarshal[ResourceContents](),
		wireUnmarshal[ResourceTemplate](),
		wireUnmarshal[ResourcesCapability](),
		wireUnmarshal[Root](),
		wireUnmarshal[RootsCapability](),
		wireUnmarshal[SamplingCapability](),
		wireUnmarshal[SamplingMessage](),
		wireUnmarshal[ServerCapabilities](),
		wireUnmarshal[ServerTasksCapability](),
		wireUnmarshal[StructuredError](),
		wireUnmarshal[SubscriptionFilter](),
		wireUnmarshal[TaskCreatedResult](),
		wireUnmarshal[TaskError](),
		wireUnmarshal[TaskMetadata](),
		wireUnmarshal[TaskRequestsCapability](),
		wireUnmarshal[TaskStatusNotificationParams](),
		wireUnmarshal[Tool](),
		wireUnmarshal[ToolAnnotations](),
		wireUnmarshal[ToolChoice](),
		wireUnmarshal[ToolExecution](),
		wireUnmarshal[ToolTaskRequests](),
		wireUnmarshal[UnsupportedVersionData](),
	}
)

// taggedTypes are the types above: their JSON is their tagged fields, so a
// schema derived from a Go type that holds one follows its structure.
var taggedTypes = []reflect.Type{
	reflect.TypeFor[Annotations](),
	reflect.TypeFor[CallToolParams](),
	reflect.TypeFor[CallToolResult](),
	reflect.TypeFor[CancelTaskResult](),
	reflect.TypeFor[ClientCapabilities](),
	reflect.TypeFor[ClientTaskRequestsCapability](),
	reflect.TypeFor[ClientTasksCapability](),
	reflect.TypeFor[CompleteArgument](),
	reflect.TypeFor[CompleteContext](),
	reflect.TypeFor[CompleteParams](),
	reflect.TypeFor[CompleteResult](),
	reflect.TypeFor[Completion](),
	reflect.TypeFor[CreateMessageParams](),
	reflect.TypeFor[CreateMessageResult](),
	reflect.TypeFor[CreateTaskResult](),
	reflect.TypeFor[DetailedTask](),
	reflect.TypeFor[DiscoverResult](),
	reflect.TypeFor[ElicitResult](),
	reflect.TypeFor[ElicitationCapability](),
	reflect.TypeFor[ElicitationSchema](),
	reflect.TypeFor[EnumItems](),
	reflect.TypeFor[EnumOption](),
	reflect.TypeFor[GetPromptParams](),
	reflect.TypeFor[GetPromptResult](),
	reflect.TypeFor[GetTaskResult](),
	reflect.TypeFor[Icon](),
	reflect.TypeFor[Implementation](),
	reflect.TypeFor[InitializeResult](),
	reflect.TypeFor[InputRequest](),
	reflect.TypeFor[ListChangedCapability](),
	reflect.TypeFor[ListPromptsResult](),
	reflect.TypeFor[ListResourceTemplatesResult](),
	reflect.TypeFor[ListResourcesResult](),
	reflect.TypeFor[ListRootsResult](),
	reflect.TypeFor[ListTasksResult](),
	reflect.TypeFor[ListToolsResult](),
	reflect.TypeFor[LoggingMessageNotificationParams](),
	reflect.TypeFor[ModelHint](),
	reflect.TypeFor[ModelPreferences](),
	reflect.TypeFor[PrimitiveSchema](),
	reflect.TypeFor[ProgressParams](),
	reflect.TypeFor[Prompt](),
	reflect.TypeFor[PromptArgument](),
	reflect.TypeFor[PromptMessage](),
	reflect.TypeFor[ReadResourceParams](),
	reflect.TypeFor[ReadResourceResult](),
	reflect.TypeFor[Resource](),
	reflect.TypeFor[ResourceContents](),
	reflect.TypeFor[ResourceTemplate](),
	reflect.TypeFor[ResourcesCapability](),
	reflect.TypeFor[Root](),
	reflect.TypeFor[RootsCapability](),
	reflect.TypeFor[SamplingCapability](),
	reflect.TypeFor[SamplingMessage](),
	reflect.TypeFor[ServerCapabilities](),
	reflect.TypeFor[ServerTasksCapability](),
	reflect.TypeFor[StructuredError](),
	reflect.TypeFor[SubscriptionFilter](),
	reflect.TypeFor[TaskCreatedResult](),
	reflect.TypeFor[TaskError](),
	reflect.TypeFor[TaskMetadata](),
	reflect.TypeFor[TaskRequestsCapability](),
	reflect.TypeFor[TaskStatusNotificationParams](),
	reflect.TypeFor[Tool](),
	reflect.TypeFor[ToolAnnotations](),
	reflect.TypeFor[ToolChoice](),
	reflect.TypeFor[ToolExecution](),
	reflect.TypeFor[ToolTaskRequests](),
	reflect.TypeFor[UnsupportedVersionData](),
}
