package mcp

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The tagged protocol types decode with keel's rules under encoding/json
// too (UnmarshalJSON): member names match case-sensitively, a duplicate
// member is an error, invalid UTF-8 is refused, so a message cannot read one
// way to a check written with encoding/json and another way to keel. Task
// and TaskInfo, embedded in other results, are decoded by the result that
// holds them.
//
// Some also have members that are always written (an array or an object,
// never null: "content": [] for a result without blocks), which
// encoding/json would write as null for a nil slice or map; MarshalJSON
// gives encoding/json the bytes keel writes. The others encode alike with
// both codecs as they are.
//
// Each xxxFields type is its protocol type without these methods: what the
// methods hand to the codec.
type (
	annotationsFields                      Annotations
	callToolParamsFields                   CallToolParams
	callToolResultFields                   CallToolResult
	cancelTaskResultFields                 CancelTaskResult
	clientCapabilitiesFields               ClientCapabilities
	clientTaskRequestsCapabilityFields     ClientTaskRequestsCapability
	clientTasksCapabilityFields            ClientTasksCapability
	completeArgumentFields                 CompleteArgument
	completeContextFields                  CompleteContext
	completeParamsFields                   CompleteParams
	completeResultFields                   CompleteResult
	completionFields                       Completion
	createMessageParamsFields              CreateMessageParams
	createMessageResultFields              CreateMessageResult
	createTaskResultFields                 CreateTaskResult
	detailedTaskFields                     DetailedTask
	discoverResultFields                   DiscoverResult
	elicitResultFields                     ElicitResult
	elicitationCapabilityFields            ElicitationCapability
	elicitationSchemaFields                ElicitationSchema
	enumItemsFields                        EnumItems
	enumOptionFields                       EnumOption
	getPromptParamsFields                  GetPromptParams
	getPromptResultFields                  GetPromptResult
	getTaskResultFields                    GetTaskResult
	iconFields                             Icon
	implementationFields                   Implementation
	initializeResultFields                 InitializeResult
	inputRequestFields                     InputRequest
	listChangedCapabilityFields            ListChangedCapability
	listPromptsResultFields                ListPromptsResult
	listResourceTemplatesResultFields      ListResourceTemplatesResult
	listResourcesResultFields              ListResourcesResult
	listRootsResultFields                  ListRootsResult
	listTasksResultFields                  ListTasksResult
	listToolsResultFields                  ListToolsResult
	loggingMessageNotificationParamsFields LoggingMessageNotificationParams
	modelHintFields                        ModelHint
	modelPreferencesFields                 ModelPreferences
	primitiveSchemaFields                  PrimitiveSchema
	progressParamsFields                   ProgressParams
	promptFields                           Prompt
	promptArgumentFields                   PromptArgument
	promptMessageFields                    PromptMessage
	readResourceParamsFields               ReadResourceParams
	readResourceResultFields               ReadResourceResult
	resourceFields                         Resource
	resourceContentsFields                 ResourceContents
	resourceTemplateFields                 ResourceTemplate
	resourcesCapabilityFields              ResourcesCapability
	rootFields                             Root
	rootsCapabilityFields                  RootsCapability
	samplingCapabilityFields               SamplingCapability
	samplingMessageFields                  SamplingMessage
	serverCapabilitiesFields               ServerCapabilities
	serverTasksCapabilityFields            ServerTasksCapability
	structuredErrorFields                  StructuredError
	subscriptionFilterFields               SubscriptionFilter
	taskCreatedResultFields                TaskCreatedResult
	taskErrorFields                        TaskError
	taskMetadataFields                     TaskMetadata
	taskRequestsCapabilityFields           TaskRequestsCapability
	taskStatusNotificationParamsFields     TaskStatusNotificationParams
	toolFields                             Tool
	toolAnnotationsFields                  ToolAnnotations
	toolChoiceFields                       ToolChoice
	toolExecutionFields                    ToolExecution
	toolTaskRequestsFields                 ToolTaskRequests
	unsupportedVersionDataFields           UnsupportedVersionData
)

func (v *Annotations) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*annotationsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Annotations) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CallToolResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*callToolResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CallToolResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CallToolResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*callToolResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v CallToolResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *CancelTaskResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*cancelTaskResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CancelTaskResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ClientCapabilities) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*clientCapabilitiesFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ClientCapabilities) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ClientTaskRequestsCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*clientTaskRequestsCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ClientTaskRequestsCapability) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

func (v *ClientTasksCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*clientTasksCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ClientTasksCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CompleteArgument) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*completeArgumentFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CompleteArgument) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CompleteContext) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*completeContextFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CompleteContext) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CompleteResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*completeResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CompleteResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CompleteResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*completeResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v CompleteResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *Completion) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*completionFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Completion) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *Completion) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*completionFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v Completion) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *CreateMessageResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*createMessageResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CreateMessageResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CreateTaskResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*createTaskResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CreateTaskResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *DetailedTask) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*detailedTaskFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *DetailedTask) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *DiscoverResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*discoverResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *DiscoverResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *DiscoverResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*discoverResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v DiscoverResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ElicitResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*elicitResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ElicitResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ElicitationCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*elicitationCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ElicitationCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ElicitationSchema) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*elicitationSchemaFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ElicitationSchema) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ElicitationSchema) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*elicitationSchemaFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ElicitationSchema) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *EnumItems) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*enumItemsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *EnumItems) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *EnumOption) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*enumOptionFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *EnumOption) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *GetPromptResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*getPromptResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *GetPromptResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *GetPromptResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*getPromptResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v GetPromptResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *GetTaskResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*getTaskResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *GetTaskResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *Icon) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*iconFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Icon) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *Implementation) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*implementationFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Implementation) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *InitializeResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*initializeResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *InitializeResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *InputRequest) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*inputRequestFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *InputRequest) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListChangedCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listChangedCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListChangedCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListPromptsResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listPromptsResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListPromptsResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListPromptsResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*listPromptsResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ListPromptsResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ListResourceTemplatesResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listResourceTemplatesResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListResourceTemplatesResult) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

func (v *ListResourceTemplatesResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*listResourceTemplatesResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ListResourceTemplatesResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ListResourcesResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listResourcesResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListResourcesResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListResourcesResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*listResourcesResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ListResourcesResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ListRootsResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listRootsResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListRootsResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListRootsResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*listRootsResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ListRootsResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ListTasksResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listTasksResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListTasksResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListTasksResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*listTasksResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ListTasksResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ListToolsResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listToolsResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListToolsResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListToolsResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*listToolsResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ListToolsResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ModelHint) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*modelHintFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ModelHint) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ModelPreferences) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*modelPreferencesFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ModelPreferences) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *PrimitiveSchema) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*primitiveSchemaFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *PrimitiveSchema) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *Prompt) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*promptFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Prompt) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *PromptArgument) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*promptArgumentFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *PromptArgument) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *PromptMessage) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*promptMessageFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *PromptMessage) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ReadResourceResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*readResourceResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ReadResourceResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ReadResourceResult) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*readResourceResultFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v ReadResourceResult) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *Resource) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*resourceFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Resource) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ResourceContents) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*resourceContentsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ResourceContents) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ResourceTemplate) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*resourceTemplateFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ResourceTemplate) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ResourcesCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*resourcesCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ResourcesCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *Root) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*rootFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Root) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *RootsCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*rootsCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *RootsCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *SamplingCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*samplingCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *SamplingCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *SamplingMessage) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*samplingMessageFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *SamplingMessage) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ServerCapabilities) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*serverCapabilitiesFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ServerCapabilities) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ServerTasksCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*serverTasksCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ServerTasksCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *StructuredError) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*structuredErrorFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *StructuredError) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *SubscriptionFilter) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*subscriptionFilterFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *SubscriptionFilter) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *TaskCreatedResult) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*taskCreatedResultFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *TaskCreatedResult) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *TaskError) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*taskErrorFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *TaskError) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *TaskMetadata) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*taskMetadataFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *TaskMetadata) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *TaskRequestsCapability) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*taskRequestsCapabilityFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *TaskRequestsCapability) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *Tool) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*toolFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *Tool) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ToolAnnotations) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*toolAnnotationsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ToolAnnotations) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ToolChoice) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*toolChoiceFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ToolChoice) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ToolExecution) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*toolExecutionFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ToolExecution) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ToolTaskRequests) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*toolTaskRequestsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ToolTaskRequests) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *UnsupportedVersionData) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*unsupportedVersionDataFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *UnsupportedVersionData) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *UnsupportedVersionData) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*unsupportedVersionDataFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v UnsupportedVersionData) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }
