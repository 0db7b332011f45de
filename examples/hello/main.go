// Command hello is a starter keel server with two typed tools. Copy it,
// rename the tools, and you have an MCP server:
//
//	go run ./examples/hello
package main

import (
	"context"
	"log"
	"strings"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// GreetInput is what the greet tool takes.
type GreetInput struct {
	Name string `json:"name" jsonschema:"minLength=1,description=Who to greet"`
}

// GreetOutput is what the greet tool returns (as structuredContent).
type GreetOutput struct {
	Greeting string `json:"greeting"`
}

// CountInput is what the count_words tool takes.
type CountInput struct {
	Text string `json:"text" jsonschema:"description=Text whose words are counted"`
}

// CountOutput is what the count_words tool returns.
type CountOutput struct {
	Words int `json:"words" jsonschema:"minimum=0"`
}

func main() {
	reg := newRegistry()
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "hello", Version: "0.1.0", Registry: reg, Tools: middleware.Standard(reg, nil)})
	if err := srv.Run(context.Background(), transport.NewStdio(nil)); err != nil {
		log.Fatal(err)
	}
}

// newRegistry registers the server's tools; tests use it too.
func newRegistry() *registry.Registry {
	reg := registry.New(nil)
	registry.MustRegister(reg, "greet", "Greets someone by name",
		func(_ context.Context, in GreetInput) (GreetOutput, error) {
			return GreetOutput{Greeting: "Hello, " + in.Name + "!"}, nil
		}, nil)
	registry.MustRegister(reg, "count_words", "Counts the words in a text",
		func(_ context.Context, in CountInput) (CountOutput, error) {
			return CountOutput{Words: len(strings.Fields(in.Text))}, nil
		}, &registry.ToolOptions{ReadOnly: true})
	return reg
}
