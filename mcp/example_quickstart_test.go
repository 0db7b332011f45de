package mcp_test

import (
	"context"
	"fmt"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// The quick start of the package documentation: a typed tool in a
// registry, a Server, and a Client joined to it by the in-memory transport
// (a real server runs on transport.NewStdio(nil) instead).
func Example() {
	type GreetIn struct {
		Name string `json:"name" jsonschema:"minLength=1"`
	}
	type GreetOut struct {
		Greeting string `json:"greeting"`
	}

	reg := registry.New(nil)
	registry.MustRegister(reg, "greet", "Greets someone by name",
		func(ctx context.Context, in GreetIn) (GreetOut, error) {
			return GreetOut{Greeting: "Hello, " + in.Name + "!"}, nil
		}, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "hello", Version: "0.1.0",
		Registry: reg, Tools: middleware.Standard(reg, nil)})

	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverEnd) }()

	c := mcp.NewClient(nil)
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	res, err := c.CallTool(ctx, "greet", map[string]any{"name": "Ann"})
	if err != nil {
		panic(err)
	}
	out, _ := mcp.DecodeStructured[GreetOut](res)
	fmt.Println(out.Greeting)

	_, err = c.CallTool(ctx, "greet", map[string]any{"name": ""})
	fmt.Println("empty name refused:", err != nil)

	c.Close()
	fmt.Println("server stopped:", <-done)
	// Output:
	// Hello, Ann!
	// empty name refused: true
	// server stopped: <nil>
}
