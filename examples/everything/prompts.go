package main

import (
	"context"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// The prompts. registry.RegisterPrompt derives a prompt's arguments from
// a struct of strings (`json:"name"` names one; omitempty or a *string
// makes it optional) and checks every get against them; completions of an
// argument come from PromptOptions.Complete.

// PromptArgs are the arguments of test_prompt_with_arguments.
type PromptArgs struct {
	Arg1 string `json:"arg1" jsonschema:"description=First test argument"`
	Arg2 string `json:"arg2" jsonschema:"description=Second test argument"`
}

// EmbedArgs are the arguments of test_prompt_with_embedded_resource.
type EmbedArgs struct {
	ResourceURI string `json:"resourceUri" jsonschema:"description=URI of the resource to embed"`
}

func registerPrompts(reg *registry.Registry) {
	registry.MustRegisterPrompt(reg, "test_simple_prompt", "A simple prompt without arguments",
		func(context.Context, struct{}) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				mcp.UserMessage(mcp.Text("This is a simple prompt for testing.")),
			}}, nil
		}, &registry.PromptOptions{Title: "Simple prompt"})

	registry.MustRegisterPrompt(reg, "test_prompt_with_arguments", "A prompt with two required arguments",
		func(_ context.Context, a PromptArgs) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				mcp.UserMessage(mcp.Text("Prompt with arguments: arg1='" + a.Arg1 + "', arg2='" + a.Arg2 + "'")),
			}}, nil
		}, &registry.PromptOptions{Title: "Prompt with arguments", Complete: map[string]registry.Completer{
			"arg1": registry.CompleteFrom("paris", "park", "party"),
			"arg2": registry.CompleteFrom("red", "green", "blue"),
		}})

	registry.MustRegisterPrompt(reg, "test_prompt_with_embedded_resource", "A prompt embedding the resource it is given",
		func(_ context.Context, a EmbedArgs) (*mcp.GetPromptResult, error) {
			res, err := mcp.EmbeddedText(a.ResourceURI, "text/plain", "Embedded resource content for testing.")
			if err != nil {
				return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: " + err.Error()}
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				mcp.UserMessage(res),
				mcp.UserMessage(mcp.Text("Please process the embedded resource above.")),
			}}, nil
		}, &registry.PromptOptions{Title: "Prompt with an embedded resource"})

	registry.MustRegisterPrompt(reg, "test_prompt_with_image", "A prompt holding an image",
		func(context.Context, struct{}) (*mcp.GetPromptResult, error) {
			img, err := mcp.Image(redPixelPNG, "image/png")
			if err != nil {
				return nil, err
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				mcp.UserMessage(img),
				mcp.UserMessage(mcp.Text("Please analyze the image above.")),
			}}, nil
		}, &registry.PromptOptions{Title: "Prompt with an image"})
}
