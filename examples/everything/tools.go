package main

import (
	"context"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// NoArgs is the input of the tools that take no arguments: an empty
// object schema that refuses unknown members.
type NoArgs struct{}

// registerTools registers every tool. Each one returns *mcp.CallToolResult,
// so it builds its content blocks itself and declares no outputSchema; see
// examples/hello for tools whose typed results become structuredContent.
func registerTools(reg *registry.Registry) {
	// Content of each type (this file).
	registry.MustRegister(reg, "test_simple_text", "Returns a simple text block", simpleText, readOnly)
	registry.MustRegister(reg, "test_image_content", "Returns an image block (a 1x1 red PNG)", imageContent, readOnly)
	registry.MustRegister(reg, "test_audio_content", "Returns an audio block (a short WAV of silence)", audioContent, readOnly)
	registry.MustRegister(reg, "test_embedded_resource", "Returns an embedded text resource", embeddedResource, readOnly)
	registry.MustRegister(reg, "test_multiple_content_types", "Returns text, image and embedded resource blocks together", multipleContent, readOnly)
	registry.MustRegister(reg, "test_error_handling", "Always fails: returns a tool error (isError)", failing, readOnly)

	// Tools that talk to the client while they run (streaming.go).
	registry.MustRegister(reg, "test_tool_with_logging", "Sends three log messages while it runs", withLogging, readOnly)
	registry.MustRegister(reg, "test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 while it runs", withProgress, readOnly)
	registry.MustRegister(reg, "test_reconnection",
		"Closes its SSE stream before answering: the client reconnects and resumes (SSE polling, 2025-11-25)", reconnection, readOnly)

	// Tools that send requests to the client (clientrequests.go).
	registry.MustRegister(reg, "test_sampling", "Asks the client's LLM to answer a prompt (sampling/createMessage)", sampling, readOnly)
	registry.MustRegister(reg, "test_elicitation", "Asks the user for a username and an email (elicitation/create)", elicitation, readOnly)
	registry.MustRegister(reg, "test_elicitation_sep1034_defaults", "Elicits a form whose fields have default values (SEP-1034)", elicitDefaults, readOnly)
	registry.MustRegister(reg, "test_elicitation_sep1330_enums", "Elicits a form with every kind of enum field (SEP-1330)", elicitEnums, readOnly)

	// A tool described by a raw JSON Schema (schema.go).
	addJSONSchemaTool(reg)
}

// readOnly marks a tool as not modifying its environment (annotations.readOnlyHint).
var readOnly = &registry.ToolOptions{ReadOnly: true}

func simpleText(context.Context, NoArgs) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("This is a simple text response for testing.")}}, nil
}

func imageContent(context.Context, NoArgs) (*mcp.CallToolResult, error) {
	img, err := mcp.Image(redPixelPNG, "image/png")
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{img}}, nil
}

func audioContent(context.Context, NoArgs) (*mcp.CallToolResult, error) {
	audio, err := mcp.Audio(silenceWAV, "audio/wav")
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{audio}}, nil
}

func embeddedResource(context.Context, NoArgs) (*mcp.CallToolResult, error) {
	res, err := mcp.EmbeddedText("test://embedded-resource", "text/plain", "This is an embedded resource content.")
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{res}}, nil
}

func multipleContent(context.Context, NoArgs) (*mcp.CallToolResult, error) {
	img, err := mcp.Image(redPixelPNG, "image/png")
	if err != nil {
		return nil, err
	}
	res, err := mcp.EmbeddedText("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("Multiple content types test:"), img, res}}, nil
}

// failing reports a failure the model should see: an isError result with
// a message of the tool's choosing. (Returning an *mcp.StructuredError
// instead gives an isError result carrying keel's structured error JSON.)
func failing(context.Context, NoArgs) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{mcp.Text("This tool intentionally returns an error for testing")},
	}, nil
}
