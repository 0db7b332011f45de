package registry_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// WeatherIn is the input of the example's tool.
type WeatherIn struct {
	City  string `json:"city" jsonschema:"minLength=1,description=City name"`
	Units string `json:"units,omitempty" jsonschema:"enum=metric,enum=imperial"`
	Days  int    `json:"days,omitempty" jsonschema:"minimum=1,maximum=7"`
}

// WeatherOut is the structured result of the example's tool.
type WeatherOut struct {
	City  string    `json:"city"`
	Temps []float64 `json:"temps"`
}

// Register derives the input schema from the handler's argument type and the
// output schema from its result type; a call validates the arguments,
// decodes them and wraps the result as structuredContent plus a text block.
func ExampleRegister() {
	r := registry.New(nil)
	registry.MustRegister(r, "forecast", "Forecasts the weather.",
		func(ctx context.Context, in WeatherIn) (WeatherOut, error) {
			return WeatherOut{City: in.City, Temps: []float64{21.5, 19}}, nil
		}, &registry.ToolOptions{ReadOnly: true})

	tool, _ := r.Lookup("forecast")
	schema := jsontext.Value(tool.Definition().InputSchema).Clone()
	_ = schema.Indent(jsontext.WithIndent("  "))
	fmt.Println(string(schema))

	res, err := r.CallTool(context.Background(), &mcp.ToolCall{Name: "forecast", Arguments: json.RawMessage(`{"city":"Oslo"}`)})
	fmt.Println(string(res.StructuredContent), err)

	_, err = r.CallTool(context.Background(), &mcp.ToolCall{Name: "forecast", Arguments: json.RawMessage(`{"city":"","days":9}`)})
	fmt.Println(err)
	// Output:
	// {
	//   "properties": {
	//     "city": {
	//       "type": "string",
	//       "minLength": 1,
	//       "description": "City name"
	//     },
	//     "units": {
	//       "type": "string",
	//       "enum": [
	//         "metric",
	//         "imperial"
	//       ]
	//     },
	//     "days": {
	//       "type": "integer",
	//       "maximum": 7,
	//       "minimum": 1
	//     }
	//   },
	//   "additionalProperties": false,
	//   "type": "object",
	//   "required": [
	//     "city"
	//   ]
	// }
	// {"city":"Oslo","temps":[21.5,19]} <nil>
	// INVALID_ARGUMENT: arguments of tool "forecast" do not match its input schema: /city: minLength: got 0, want 1 (and 1 more)
}

// AddTool registers a tool described by a raw JSON Schema; here draft-07.
func ExampleRegistry_AddTool() {
	r := registry.New(nil)
	err := r.AddTool(&mcp.Tool{
		Name:        "shout",
		Description: "Upper-cases a message.",
		InputSchema: json.RawMessage(`{
			"$schema": "http://json-schema.org/draft-07/schema#",
			"type": "object",
			"properties": {"message": {"type": "string", "maxLength": 5}},
			"required": ["message"]
		}`),
	}, func(ctx context.Context, call *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
		return mcp.TextResult("OK"), nil
	}, nil)
	fmt.Println(err)

	tool, _ := r.Lookup("shout")
	se := tool.ValidateArguments(json.RawMessage(`{"message":"far too long","extra":1}`))
	for _, v := range se.Details["violations"].([]registry.Violation) {
		fmt.Printf("%s: %s\n", v.Path, v.Message)
	}
	// Output:
	// <nil>
	// /message: maxLength: got 12, want 5
}
