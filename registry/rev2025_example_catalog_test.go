//go:build !keel_omit2025

package registry_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// A static resource and an RFC 6570 resource template whose handler gets
// the variables extracted from the URI, served and read by a Client over
// the in-memory transport; the template's variable completes too.
func ExampleRegistry_AddResourceTemplate() {
	reg := registry.New(nil)
	_ = reg.AddTextResource(&mcp.Resource{URI: "docs://readme", Name: "readme"}, "Welcome to keel.")
	_ = reg.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "docs://pages/{name}{?lang}", Name: "page", MimeType: "text/markdown"},
		func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			if vars.Get("name") == "missing" {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			lang := vars.Get("lang")
			if lang == "" {
				lang = "en"
			}
			return []mcp.ResourceContents{mcp.TextResourceContents(uri, "", "# "+vars.Get("name")+" ("+lang+")")}, nil
		}, &registry.TemplateOptions{Complete: map[string]registry.Completer{
			"name": registry.CompleteFrom("intro", "install", "api"),
		}})

	ctx := context.Background()
	srv := mcp.NewServer(&mcp.ServerOptions{Registry: reg})
	clientEnd, serverEnd := transport.NewPipe(nil)
	go func() { _ = srv.Run(ctx, serverEnd) }()
	c := mcp.NewClient(nil)
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	defer c.Close()

	resources, _ := c.ListAllResources(ctx)
	templates, _ := c.ListAllResourceTemplates(ctx)
	fmt.Println("resources:", resources[0].URI, "templates:", templates[0].URITemplate)

	res, _ := c.ReadResource(ctx, "docs://pages/install?lang=de")
	rc := res.Contents[0]
	fmt.Println(rc.URI, rc.MimeType, *rc.Text)

	_, err := c.ReadResource(ctx, "docs://pages/missing")
	var rpcErr *mcp.Error
	if errors.As(err, &rpcErr) {
		fmt.Println("error:", rpcErr.Code, rpcErr.Message)
	}

	comp, _ := c.CompleteTemplate(ctx, "docs://pages/{name}{?lang}", "name", "in", nil)
	fmt.Println("completions:", comp.Values)
	// Output:
	// resources: docs://readme templates: docs://pages/{name}{?lang}
	// docs://pages/install?lang=de text/markdown # install (de)
	// error: -32002 Resource not found
	// completions: [intro install]
}

// ReviewArgs are the arguments of the example's prompt: a required code
// and an optional language (a pointer).
type ReviewArgs struct {
	Code     string  `json:"code" jsonschema:"description=The code to review"`
	Language *string `json:"language" jsonschema:"description=Programming language"`
}

// RegisterPrompt derives a prompt's arguments from a Go struct; prompts/get
// checks them and hands the handler a filled struct.
func ExampleRegisterPrompt() {
	reg := registry.New(nil)
	registry.MustRegisterPrompt(reg, "review", "Reviews a piece of code.",
		func(_ context.Context, a ReviewArgs) (*mcp.GetPromptResult, error) {
			lang := "some"
			if a.Language != nil {
				lang = *a.Language
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				mcp.UserMessage(mcp.Text("Please review this " + lang + " code:\n" + a.Code)),
			}}, nil
		}, nil)

	ctx := context.Background()
	srv := mcp.NewServer(&mcp.ServerOptions{Registry: reg})
	clientEnd, serverEnd := transport.NewPipe(nil)
	go func() { _ = srv.Run(ctx, serverEnd) }()
	c := mcp.NewClient(nil)
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	defer c.Close()

	prompts, _ := c.ListAllPrompts(ctx)
	for _, a := range prompts[0].Arguments {
		fmt.Printf("argument %s (required: %v): %s\n", a.Name, a.Required, a.Description)
	}

	res, _ := c.GetPrompt(ctx, "review", map[string]string{"code": "x := 1", "language": "Go"})
	fmt.Println(res.Messages[0].Role+":", res.Messages[0].Content.Text)

	_, err := c.GetPrompt(ctx, "review", nil)
	var rpcErr *mcp.Error
	if errors.As(err, &rpcErr) {
		fmt.Println("error:", rpcErr.Code, rpcErr.Message)
	}
	// Output:
	// argument code (required: true): The code to review
	// argument language (required: false): Programming language
	// user: Please review this Go code:
	// x := 1
	// error: -32602 prompt "review": missing required argument(s) code
}
