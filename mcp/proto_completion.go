package mcp

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Completion reference types.
const (
	RefPrompt   = "ref/prompt"   // a prompt, by name
	RefResource = "ref/resource" // a resource template, by URI template
)

// MaxCompletionValues is the most values a completion/complete result may
// hold.
const MaxCompletionValues = 100

// CompleteReference names what completion/complete completes an argument
// of. Type selects the meaningful fields:
//
//	ref/prompt    Name, Title (PromptReference)
//	ref/resource  URI, a URI template (ResourceTemplateReference; ResourceReference before 2025-06-18)
type CompleteReference struct {
	Type  string
	Name  string
	Title string // 2025-06-18
	URI   string
}

type promptRefWire struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
}

type resourceRefWire struct {
	Type string `json:"type"`
	URI  string `json:"uri"`
}

// marshalWire writes the wire form of the reference for its Type.
func (r CompleteReference) marshalWire(enc *jsontext.Encoder) error {
	switch r.Type {
	case RefPrompt:
		return json.MarshalEncode(enc, &promptRefWire{r.Type, r.Name, r.Title})
	case RefResource:
		return json.MarshalEncode(enc, &resourceRefWire{r.Type, r.URI})
	default:
		return fmt.Errorf("mcp: unknown completion reference type %q", r.Type)
	}
}

type refWire struct {
	Type  string  `json:"type"`
	Name  *string `json:"name"`
	Title string  `json:"title"`
	URI   *string `json:"uri"`
}

// unmarshalWire reads a reference and checks that the members its type
// requires are present.
func (r *CompleteReference) unmarshalWire(dec *jsontext.Decoder) error {
	var w refWire
	if err := json.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*r = CompleteReference{Type: w.Type}
	switch w.Type {
	case RefPrompt:
		if w.Name == nil {
			return fmt.Errorf("mcp: %s reference without \"name\"", w.Type)
		}
		r.Name, r.Title = *w.Name, w.Title
	case RefResource:
		if w.URI == nil {
			return fmt.Errorf("mcp: %s reference without \"uri\"", w.Type)
		}
		r.URI = *w.URI
	default:
		return fmt.Errorf("mcp: unknown completion reference type %q", w.Type)
	}
	return nil
}

// CompleteArgument is the argument being completed and its partial value.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext is extra context for a completion (2025-06-18).
type CompleteContext struct {
	// Arguments are previously resolved arguments of the prompt or
	// variables of the URI template.
	Arguments map[string]string `json:"arguments,omitempty"`
}

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	Ref      CompleteReference `json:"ref"`
	Argument CompleteArgument  `json:"argument"`
	Context  *CompleteContext  `json:"context,omitzero"` // 2025-06-18
	Meta     Meta              `json:"_meta,omitempty"`
}

// Completion is the completion member of a completion/complete result.
// Values is always written (an empty array when nil) and holds at most
// MaxCompletionValues values.
type Completion struct {
	Values  []string `json:"values"`
	Total   *int64   `json:"total,omitzero"`   // number of options available, may exceed len(Values)
	HasMore bool     `json:"hasMore,omitzero"` // more options exist beyond Values
}

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion Completion `json:"completion"`
	Meta       Meta       `json:"_meta,omitempty"`
}
