package mcp

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The methods of the request and notification params, as described in
// wirejson_types.go.

func (v *CallToolParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*callToolParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CallToolParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CancelTaskParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*cancelTaskParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CancelTaskParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CancelledParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*cancelledParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CancelledParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CompleteParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*completeParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CompleteParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CreateMessageParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*createMessageParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CreateMessageParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *CreateMessageParams) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*createMessageParamsFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v CreateMessageParams) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *ElicitationCompleteNotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*elicitationCompleteNotificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ElicitationCompleteNotificationParams) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

func (v *GetPromptParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*getPromptParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *GetPromptParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *GetTaskParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*getTaskParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *GetTaskParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *GetTaskPayloadParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*getTaskPayloadParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *GetTaskPayloadParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *InitializeParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*initializeParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *InitializeParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ListenParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*listenParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ListenParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *LoggingMessageNotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*loggingMessageNotificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *LoggingMessageNotificationParams) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

func (v *NotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*notificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *NotificationParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *PaginatedParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*paginatedParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *PaginatedParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ProgressParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*progressParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ProgressParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ReadResourceParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*readResourceParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ReadResourceParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *RequestParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*requestParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *RequestParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *ResourceUpdatedNotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*resourceUpdatedNotificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *ResourceUpdatedNotificationParams) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

func (v *SetLevelParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*setLevelParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *SetLevelParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *SubscribeParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*subscribeParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *SubscribeParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *SubscriptionAcknowledgedParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*subscriptionAcknowledgedParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *SubscriptionAcknowledgedParams) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

func (v *SubscriptionAcknowledgedParams) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*subscriptionAcknowledgedParamsFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v SubscriptionAcknowledgedParams) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }

func (v *TaskNotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*taskNotificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *TaskNotificationParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *TaskStatusNotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*taskStatusNotificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *TaskStatusNotificationParams) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

func (v *UnsubscribeParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*unsubscribeParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *UnsubscribeParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *UpdateTaskParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*updateTaskParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *UpdateTaskParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *UpdateTaskParams) marshalWire(enc *jsontext.Encoder) error {
	return jsonv2.MarshalEncode(enc, (*updateTaskParamsFields)(v))
}

// MarshalJSON returns the wire form of v, as keel writes it in a message.
func (v UpdateTaskParams) MarshalJSON() ([]byte, error) { return jsonrpc.Marshal(&v) }
