package mcp

import (
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
