package mcp

import (
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Elicitation modes (2025-11-25; before that every elicitation is a form).
const (
	ElicitModeForm = "form" // the client renders a form for RequestedSchema
	ElicitModeURL  = "url"  // the user completes the interaction out of band at URL
)

// ElicitParams are the params of elicitation/create (2025-06-18),
// ElicitRequestParams in the schema. Mode selects the meaningful fields:
//
//	"" or form  Message, RequestedSchema (ElicitRequestFormParams)
//	url         Message, URL, ElicitationID (ElicitRequestURLParams, 2025-11-25)
//
// Both may carry Task and Meta. A Mode of "" is not written, as revision
// 2025-06-18 requires. A form without RequestedSchema is written with the
// schema of an empty form, {"type":"object","properties":{}}.
type ElicitParams struct {
	Mode    string
	Message string
	// RequestedSchema is the JSON Schema of the form: an object schema whose
	// properties are primitive (see ElicitationSchema).
	RequestedSchema json.RawMessage
	URL             string        // url mode: where the user goes
	ElicitationID   string        // url mode: opaque id, unique within the server
	Task            *TaskMetadata // 2025-11-25
	Meta            Meta
}

type elicitFormWire struct {
	Mode            string         `json:"mode,omitempty"`
	Message         string         `json:"message"`
	RequestedSchema jsontext.Value `json:"requestedSchema"`
	Task            *TaskMetadata  `json:"task,omitzero"`
	Meta            Meta           `json:"_meta,omitempty"`
}

type elicitURLWire struct {
	Mode          string        `json:"mode"`
	Message       string        `json:"message"`
	URL           string        `json:"url"`
	ElicitationID string        `json:"elicitationId"`
	Task          *TaskMetadata `json:"task,omitzero"`
	Meta          Meta          `json:"_meta,omitempty"`
}

var emptyFormSchema = jsontext.Value(`{"type":"object","properties":{}}`)

// marshalWire writes the wire form of the params for their Mode.
func (p ElicitParams) marshalWire(enc *jsontext.Encoder) error {
	switch p.Mode {
	case "", ElicitModeForm:
		s := p.RequestedSchema
		if len(s) == 0 {
			s = json.RawMessage(emptyFormSchema)
		}
		return jsonv2.MarshalEncode(enc, &elicitFormWire{p.Mode, p.Message, jsontext.Value(s), p.Task, p.Meta})
	case ElicitModeURL:
		return jsonv2.MarshalEncode(enc, &elicitURLWire{p.Mode, p.Message, p.URL, p.ElicitationID, p.Task, p.Meta})
	default:
		return fmt.Errorf("mcp: unknown elicitation mode %q", p.Mode)
	}
}

type elicitWire struct {
	Mode            string         `json:"mode"`
	Message         *string        `json:"message"`
	RequestedSchema jsontext.Value `json:"requestedSchema"`
	URL             *string        `json:"url"`
	ElicitationID   *string        `json:"elicitationId"`
	Task            *TaskMetadata  `json:"task"`
	Meta            Meta           `json:"_meta"`
}

// unmarshalWire reads elicitation params and checks that the members
// their mode requires are present.
func (p *ElicitParams) unmarshalWire(dec *jsontext.Decoder) error {
	var w elicitWire
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	mode := w.Mode
	if mode == "" {
		mode = ElicitModeForm
	}
	missing := func(member string) error {
		return fmt.Errorf("mcp: %s elicitation without %q", mode, member)
	}
	if w.Message == nil {
		return missing("message")
	}
	*p = ElicitParams{Mode: w.Mode, Message: *w.Message, Task: w.Task, Meta: w.Meta}
	switch mode {
	case ElicitModeForm:
		if w.RequestedSchema == nil {
			return missing("requestedSchema")
		}
		p.RequestedSchema = json.RawMessage(w.RequestedSchema)
	case ElicitModeURL:
		if w.URL == nil {
			return missing("url")
		}
		if w.ElicitationID == nil {
			return missing("elicitationId")
		}
		p.URL, p.ElicitationID = *w.URL, *w.ElicitationID
	default:
		return fmt.Errorf("mcp: unknown elicitation mode %q", w.Mode)
	}
	return nil
}

// ElicitationSchema is the typed form of a form elicitation's
// RequestedSchema: a flat object schema whose properties are primitive.
// Marshal it into ElicitParams.RequestedSchema, or unmarshal a received
// RequestedSchema into it.
type ElicitationSchema struct {
	Schema     string                     `json:"$schema,omitempty"`
	Type       string                     `json:"type"` // always "object"
	Properties map[string]PrimitiveSchema `json:"properties"`
	Required   []string                   `json:"required,omitempty"`
}

// PrimitiveSchema is the schema of one field of an elicitation form
// (PrimitiveSchemaDefinition, 2025-06-18). Type selects the variant and
// its meaningful fields:
//
//	string            Format, MinLength, MaxLength (StringSchema)
//	number, integer   Minimum, Maximum (NumberSchema)
//	boolean           (BooleanSchema)
//	string + Enum     single-select; EnumNames is the deprecated way to title the values (LegacyTitledEnumSchema)
//	string + OneOf    titled single-select (TitledSingleSelectEnumSchema, 2025-11-25)
//	array + Items     multi-select, MinItems, MaxItems (2025-11-25)
//
// Default is of the field's type (a []string for multi-select); defaults
// of string and number fields exist since 2025-11-25.
type PrimitiveSchema struct {
	Type        string       `json:"type"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	Format      string       `json:"format,omitempty"` // email, uri, date, date-time
	MinLength   *int64       `json:"minLength,omitzero"`
	MaxLength   *int64       `json:"maxLength,omitzero"`
	Minimum     *float64     `json:"minimum,omitzero"`
	Maximum     *float64     `json:"maximum,omitzero"`
	Enum        []string     `json:"enum,omitempty"`
	EnumNames   []string     `json:"enumNames,omitempty"` // deprecated in 2025-11-25
	OneOf       []EnumOption `json:"oneOf,omitempty"`     // 2025-11-25
	Items       *EnumItems   `json:"items,omitzero"`      // 2025-11-25
	MinItems    *int64       `json:"minItems,omitzero"`   // 2025-11-25
	MaxItems    *int64       `json:"maxItems,omitzero"`   // 2025-11-25
	Default     any          `json:"default,omitzero"`
}

// EnumOption is one value of a titled enum and its display title
// (2025-11-25).
type EnumOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// EnumItems are the items of a multi-select field (2025-11-25): Type
// "string" with Enum (untitled), or AnyOf (titled).
type EnumItems struct {
	Type  string       `json:"type,omitempty"`
	Enum  []string     `json:"enum,omitempty"`
	AnyOf []EnumOption `json:"anyOf,omitempty"`
}

// Elicitation actions.
const (
	ElicitAccept  = "accept"  // the user submitted the form (or consented, in url mode)
	ElicitDecline = "decline" // the user explicitly declined
	ElicitCancel  = "cancel"  // the user dismissed the request without choosing
)

// ElicitResult is the result of elicitation/create (2025-06-18).
type ElicitResult struct {
	Action string `json:"action"`
	// Content is the submitted form, present only when Action is accept in
	// form mode. Values are strings, numbers, booleans or (2025-11-25)
	// arrays of strings.
	Content map[string]any `json:"content,omitempty"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// elicitationCompleteNotificationParams are the params of
// notifications/elicitation/complete: the out-of-band interaction of a URL
// elicitation finished (2025-11-25).
type elicitationCompleteNotificationParams struct {
	ElicitationID string `json:"elicitationId"`
	Meta          Meta   `json:"_meta,omitempty"`
}

// urlElicitationRequiredData is error.data of a -32042 error
// (CodeURLElicitation): the URL elicitations the client must complete
// before the request can succeed (2025-11-25).
type urlElicitationRequiredData struct {
	Elicitations  []ElicitParams `json:"elicitations"`
	CorrelationID string         `json:"correlationId,omitempty"`
}

func (d *urlElicitationRequiredData) correlatedWith(id func() string) any {
	if d.CorrelationID != "" {
		return nil
	}
	c := *d
	c.CorrelationID = id()
	return &c
}

// NewURLElicitationRequiredError returns a -32042 error asking the client
// to complete the given elicitations, whose Mode it sets to url.
func NewURLElicitationRequiredError(message string, elicitations ...ElicitParams) *Error {
	list := make([]ElicitParams, len(elicitations))
	for i, e := range elicitations {
		e.Mode = ElicitModeURL
		list[i] = e
	}
	return &Error{Code: CodeURLElicitation, Message: message, Data: &urlElicitationRequiredData{Elicitations: list}}
}
