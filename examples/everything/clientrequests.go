package main

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
)

// Tools that send requests to the client: sampling (the client's LLM
// answers) and elicitation (the client's user fills in a form). The
// session of the call (mcp.SessionFromContext) sends them; it returns an
// *mcp.CapabilityError, without sending anything, when the client did not
// declare the capability. The tool then fails with that message.

// SamplingArgs is the input of test_sampling.
type SamplingArgs struct {
	Prompt string `json:"prompt" jsonschema:"description=The prompt to send to the LLM"`
}

func sampling(ctx context.Context, in SamplingArgs) (*mcp.CallToolResult, error) {
	res, err := mcp.SessionFromContext(ctx).CreateMessage(ctx, &mcp.CreateMessageParams{
		Messages: []mcp.SamplingMessage{{
			Role:    mcp.RoleUser,
			Content: mcp.SamplingMessageContent{mcp.SamplingText(in.Prompt)},
		}},
		MaxTokens: 100,
	})
	if err != nil {
		return nil, mcp.NewToolError(mcp.ErrInternal, "sampling failed: "+err.Error(), nil)
	}
	answer := "(no text in the response)"
	for _, c := range res.Content {
		if c.Type == mcp.ContentText {
			answer = c.Text
			break
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("LLM response: " + answer)}}, nil
}

// ElicitationArgs is the input of test_elicitation.
type ElicitationArgs struct {
	Message string `json:"message" jsonschema:"description=The message to show the user"`
}

func elicitation(ctx context.Context, in ElicitationArgs) (*mcp.CallToolResult, error) {
	return elicit(ctx, "User response", in.Message, &mcp.ElicitationSchema{
		Type: "object",
		Properties: map[string]mcp.PrimitiveSchema{
			"username": {Type: "string", Description: "User's response"},
			"email":    {Type: "string", Description: "User's email address", Format: "email"},
		},
		Required: []string{"username", "email"},
	})
}

// elicitDefaults elicits a form with a default value for each primitive
// type (defaults of string and number fields exist since 2025-11-25).
func elicitDefaults(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
	return elicit(ctx, "Elicitation completed", "Please review your profile (defaults are pre-filled)", &mcp.ElicitationSchema{
		Type: "object",
		Properties: map[string]mcp.PrimitiveSchema{
			"name":     {Type: "string", Description: "User name", Default: "John Doe"},
			"age":      {Type: "integer", Description: "User age", Default: 30},
			"score":    {Type: "number", Description: "User score", Default: 95.5},
			"status":   {Type: "string", Description: "User status", Enum: []string{"active", "inactive", "pending"}, Default: "active"},
			"verified": {Type: "boolean", Description: "Verification status", Default: true},
		},
	})
}

// elicitEnums elicits a form with the five kinds of enum field: untitled
// and titled single-select, the legacy titled form (enumNames, deprecated),
// untitled and titled multi-select.
func elicitEnums(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
	titled := func(prefix, word string) []mcp.EnumOption {
		return []mcp.EnumOption{
			{Const: prefix + "1", Title: "First " + word},
			{Const: prefix + "2", Title: "Second " + word},
			{Const: prefix + "3", Title: "Third " + word},
		}
	}
	options := []string{"option1", "option2", "option3"}
	return elicit(ctx, "Elicitation completed", "Please choose", &mcp.ElicitationSchema{
		Type: "object",
		Properties: map[string]mcp.PrimitiveSchema{
			"untitledSingle": {Type: "string", Enum: options},
			"titledSingle":   {Type: "string", OneOf: titled("value", "Option")},
			"legacyEnum": {Type: "string", Enum: []string{"opt1", "opt2", "opt3"},
				EnumNames: []string{"Option One", "Option Two", "Option Three"}},
			"untitledMulti": {Type: "array", Items: &mcp.EnumItems{Type: "string", Enum: options}},
			"titledMulti":   {Type: "array", Items: &mcp.EnumItems{AnyOf: titled("value", "Choice")}},
		},
	})
}

// elicit sends a form elicitation and reports the user's answer as
// "<label>: action=<action>, content=<JSON>".
func elicit(ctx context.Context, label, message string, schema *mcp.ElicitationSchema) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(schema, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	res, err := mcp.SessionFromContext(ctx).Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: raw})
	if err != nil {
		return nil, mcp.NewToolError(mcp.ErrInternal, "elicitation failed: "+err.Error(), nil)
	}
	content, err := json.Marshal(res.Content, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text(fmt.Sprintf("%s: action=%s, content=%s", label, res.Action, content))}}, nil
}
