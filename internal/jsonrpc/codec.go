package jsonrpc

import (
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
)

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
}

// Options returns the codec's options, for code that encodes or decodes
// protocol values outside a message.
func Options() json.Options { return options }

// Marshal encodes v as the codec writes it in a message.
func Marshal(v any) ([]byte, error) { return json.Marshal(v, options) }

// Unmarshal decodes data into v (a pointer) as the codec reads a message.
func Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v, options) }
