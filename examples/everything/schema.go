package main

import (
	"context"
	"encoding/json"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// jsonSchema202012 is the input schema of json_schema_2020_12_tool, written
// by hand: a JSON Schema 2020-12 document with $schema, $defs, $anchor and
// $ref, composition (allOf, anyOf), conditionals (if, then, else) and
// additionalProperties. keel compiles it once at
// registration, validates every call against it, and lists it verbatim.
const jsonSchema202012 = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "address",
			"type": "object",
			"properties": {
				"street": {"type": "string"},
				"city": {"type": "string"}
			}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`

// addJSONSchemaTool registers a tool from a raw definition with
// registry.AddTool: the handler receives the validated arguments as JSON.
func addJSONSchemaTool(reg *registry.Registry) {
	err := reg.AddTool(&mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features ($schema, $defs, $ref, allOf/anyOf, if/then/else, additionalProperties)",
		InputSchema: json.RawMessage(jsonSchema202012),
	}, func(_ context.Context, _ *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("JSON Schema 2020-12 tool called with: " + string(args))}}, nil
	}, readOnly)
	if err != nil {
		panic(err)
	}
}
