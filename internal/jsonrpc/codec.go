package jsonrpc

import (
	"reflect"

	"github.com/go-json-experiment/json"
)

// The codec's options: deterministic member order for maps, and the
// arshalers the protocol packages register for the types whose wire form
// they write themselves (an interface with an unexported method, so the
// methods stay out of the public API). Registered once, from package
// init functions, before any message is encoded.
var (
	marshalers   []*json.Marshalers
	unmarshalers []*json.Unmarshalers
	options      json.Options = json.Deterministic(true)
	// optionsGen counts the changes of options (a pooled decoder made
	// before the last one is reset with them before use: WithDecoder).
	optionsGen  int
	fieldShaped = map[reflect.Type]bool{}
)

// RegisterFieldShaped records types whose JSON methods write and read their
// tagged fields as the codec does by default (the methods exist so that
// encoding/json does the same): schema derivation may follow their Go
// structure. Call it only from a package init function.
func RegisterFieldShaped(types ...reflect.Type) {
	for _, t := range types {
		fieldShaped[t] = true
	}
}

// FieldShaped reports whether t was registered with RegisterFieldShaped.
func FieldShaped(t reflect.Type) bool { return fieldShaped[t] }

// RegisterArshalers adds a package's marshalers and unmarshalers to the
// codec. Call it only from a package init function.
func RegisterArshalers(m *json.Marshalers, u *json.Unmarshalers) {
	if m != nil {
		marshalers = append(marshalers, m)
	}
	if u != nil {
		unmarshalers = append(unmarshalers, u)
	}
	options = json.JoinOptions(json.Deterministic(true),
		json.WithMarshalers(json.JoinMarshalers(marshalers...)),
		json.WithUnmarshalers(json.JoinUnmarshalers(unmarshalers...)))
	optionsGen++
}

// Options returns the codec's options, for code that encodes or decodes
// protocol values outside a message.
func Options() json.Options { return options }

// Marshal encodes v as the codec writes it in a message.
func Marshal(v any) ([]byte, error) { return json.Marshal(v, options) }

// Unmarshal decodes data into v (a pointer) as the codec reads a message.
func Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v, options) }
