package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
)

// Register registers a typed tool: its input schema is derived from In and,
// unless Out is string or *mcp.CallToolResult, its output schema from Out,
// both with github.com/invopop/jsonschema, once, here. In and Out must be
// structs (or maps with string keys, or pointers to either): schema roots
// are objects.
//
// Struct tags shape the schemas: `json:"name,omitempty"` names a member and
// makes it optional (members without omitempty or omitzero are required);
// `jsonschema:"minLength=1,maxLength=64,pattern=^[a-z]+$,enum=a,enum=b,
// minimum=0,maximum=10,description=..."` adds constraints (escape a comma
// inside a value as \,). The options are those invopop/jsonschema reads:
// title, description, type, anchor, default, example, enum, format,
// pattern, minLength, maxLength, readOnly, writeOnly, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems,
// uniqueItems, oneof_required, anyof_required, oneof_ref, oneof_type,
// anyof_ref, anyof_type (each key=value), and required, nullable and a
// leading "-"; any other option (a misspelt key, or the tail of a value
// with an unescaped comma) is a *RegistrationError naming the field and
// the option, where invopop would silently drop it. Unknown members are refused (additionalProperties
// false). Recursive types are described with "$defs" and "$ref"; the root
// stays inline. Pointer and interface members without omitempty may be
// null, as the codec writes nil ones (so a zero Out matches its own schema,
// and a recursive *T member of In can end). A type the codec cannot encode
// (time.Duration without a format tag, for one) is refused here.
//
// On each call the arguments, validated against the input schema, are
// decoded into In with the wire codec (github.com/go-json-experiment/json:
// member names match case-sensitively) and h runs with a context from which
// mcp.ToolCallFromContext returns the call. The result is wrapped by Out:
//
//   - *mcp.CallToolResult: returned as is (no outputSchema);
//   - string: one text block (no outputSchema);
//   - anything else: structuredContent is the JSON of the value, and one
//     text block carries the same JSON. The value is checked against the
//     output schema (INTERNAL, reason "output_schema_mismatch", when it does
//     not match); a value the codec cannot encode is an INTERNAL error with
//     reason "result_not_serializable".
//
// An error returned by h is returned unchanged (see ToolHandler).
// Registration rules and errors are those of Registry.AddTool.
func Register[In, Out any](r *Registry, name, description string, h func(ctx context.Context, in In) (Out, error), opts *ToolOptions) error {
	t, err := newTypedTool(name, description, h, opts)
	if err != nil {
		return err
	}
	return r.add(t)
}

// MustRegister is like Register but panics if the registration fails. It is
// meant for main packages and examples, where a bad tool is a programming
// error.
func MustRegister[In, Out any](r *Registry, name, description string, h func(ctx context.Context, in In) (Out, error), opts *ToolOptions) {
	if err := Register(r, name, description, h, opts); err != nil {
		panic(err)
	}
}

func newTypedTool[In, Out any](name, description string, h func(context.Context, In) (Out, error), opts *ToolOptions) (*Tool, error) {
	if err := CheckToolName(name); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, &RegistrationError{Tool: name, Err: fmt.Errorf("nil handler")}
	}
	inType := reflect.TypeFor[In]()
	in, err := deriveSchema(inType)
	if err != nil {
		return nil, &RegistrationError{Tool: name, Err: fmt.Errorf("input type %v: %w", inType, err)}
	}
	if err := checkObjectRoot(in); err != nil {
		return nil, &RegistrationError{Tool: name, Err: fmt.Errorf("input type %v: %w", inType, err)}
	}
	if err := probeCodec(inType); err != nil {
		return nil, &RegistrationError{Tool: name, Err: fmt.Errorf("input type %v: %w", inType, err)}
	}
	def := &mcp.Tool{Name: name, Description: description, InputSchema: json.RawMessage(in)}

	var raw ToolHandler
	switch f := any(h).(type) {
	case func(context.Context, In) (*mcp.CallToolResult, error):
		raw = func(ctx context.Context, call *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
			v, err := decodeArgs[In](name, jsontext.Value(args))
			if err != nil {
				return nil, err
			}
			res, err := f(withCall(ctx, call), v)
			if err == nil && res == nil {
				res = &mcp.CallToolResult{Content: []mcp.Content{}}
			}
			return res, err
		}
	case func(context.Context, In) (string, error):
		raw = func(ctx context.Context, call *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
			v, err := decodeArgs[In](name, jsontext.Value(args))
			if err != nil {
				return nil, err
			}
			s, err := f(withCall(ctx, call), v)
			if err != nil {
				return nil, err
			}
			return textResult(s, nil), nil
		}
	default:
		outType := reflect.TypeFor[Out]()
		out, err := deriveSchema(outType)
		if err != nil {
			return nil, &RegistrationError{Tool: name, Err: fmt.Errorf("output type %v: %w", outType, err)}
		}
		if err := checkObjectRoot(out); err != nil {
			return nil, &RegistrationError{Tool: name, Err: fmt.Errorf("output type %v: %w (return string or *mcp.CallToolResult for unstructured results)", outType, err)}
		}
		if err := probeCodec(outType); err != nil {
			return nil, &RegistrationError{Tool: name, Err: fmt.Errorf("output type %v: %w", outType, err)}
		}
		def.OutputSchema = json.RawMessage(out)
		raw = func(ctx context.Context, call *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
			v, err := decodeArgs[In](name, jsontext.Value(args))
			if err != nil {
				return nil, err
			}
			o, err := h(withCall(ctx, call), v)
			if err != nil {
				return nil, err
			}
			b, err := jsonv2.Marshal(o, jsonv2.Deterministic(true))
			if err != nil {
				se := &mcp.StructuredError{
					Code:    mcp.ErrInternal,
					Message: fmt.Sprintf("result of tool %q cannot be serialized: %v", name, err),
					Details: map[string]any{"reason": "result_not_serializable", "tool": name},
				}
				if call != nil {
					se.CorrelationID, se.RunID = call.CorrelationID, call.RunID
				}
				return nil, se
			}
			return textResult(string(b), b), nil
		}
	}
	return newTool(def, raw, opts)
}

// textResult returns a result with one text block (and structured content,
// if any) in a single allocation.
func textResult(text string, structured jsontext.Value) *mcp.CallToolResult {
	r := &struct {
		res     mcp.CallToolResult
		content [1]mcp.Content
	}{}
	r.content[0] = mcp.Content{Type: mcp.ContentText, Text: text}
	r.res.Content = r.content[:]
	r.res.StructuredContent = json.RawMessage(structured)
	return &r.res
}

// checkObjectRoot reports a derived schema whose root is not an object.
func checkObjectRoot(schema jsontext.Value) error {
	var root struct {
		Type any `json:"type"`
	}
	if err := jsonv2.Unmarshal(schema, &root, jsonv2.RejectUnknownMembers(false)); err != nil {
		return err
	}
	if root.Type != "object" {
		return fmt.Errorf(`its JSON Schema root must be "type": "object" (got %s); use a struct or a map with string keys`, describeType(root.Type))
	}
	return nil
}

// probeCodec encodes the zero value of t with the wire codec, so that types
// it cannot represent (such as time.Duration without a format tag) fail at
// registration rather than on every call.
func probeCodec(t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, err := jsonv2.Marshal(reflect.New(t).Interface()); err != nil {
		return fmt.Errorf("the wire codec cannot encode it: %w", err)
	}
	return nil
}

// decodeArgs decodes validated arguments into a new In.
func decodeArgs[In any](name string, args jsontext.Value) (In, error) {
	var v In
	if err := jsonv2.Unmarshal(args, &v); err != nil {
		return v, &mcp.StructuredError{
			Code:    mcp.ErrInvalidArgument,
			Message: "arguments of tool " + strconv.Quote(name) + " do not fit its input type: " + err.Error(),
			Details: map[string]any{"tool": name},
		}
	}
	return v, nil
}

// withCall returns ctx carrying call, unless it already does.
func withCall(ctx context.Context, call *mcp.ToolCall) context.Context {
	if call == nil || mcp.ToolCallFromContext(ctx) == call {
		return ctx
	}
	return mcp.WithToolCall(ctx, call)
}
