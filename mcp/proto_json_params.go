package mcp

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The methods of the request and notification params, as described in
// proto_json_types.go.

func (v *CallToolParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*callToolParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *CallToolParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

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

func (v *GetPromptParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*getPromptParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *GetPromptParams) UnmarshalJSON(data []byte) error { return jsonrpc.Unmarshal(data, v) }

func (v *LoggingMessageNotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*loggingMessageNotificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *LoggingMessageNotificationParams) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}

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

func (v *TaskStatusNotificationParams) unmarshalWire(dec *jsontext.Decoder) error {
	return jsonv2.UnmarshalDecode(dec, (*taskStatusNotificationParamsFields)(v))
}

// UnmarshalJSON decodes v as keel's codec does.
func (v *TaskStatusNotificationParams) UnmarshalJSON(data []byte) error {
	return jsonrpc.Unmarshal(data, v)
}
