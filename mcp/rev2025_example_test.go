//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// A server and a client joined by the in-memory transport: the shape of a
// downstream unit test.
func ExampleServer() {
	type AddIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type AddOut struct {
		Sum int `json:"sum"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "add", "Adds two integers",
		func(_ context.Context, in AddIn) (AddOut, error) { return AddOut{Sum: in.A + in.B}, nil }, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "calc", Version: "1.0.0", Tools: middleware.Standard(reg, nil)})

	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverEnd) }()

	c := mcp.NewClient(nil)
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	fmt.Println("negotiated", c.ProtocolVersion(), "with", c.InitializeResult().ServerInfo.Name)

	res, _ := c.CallTool(ctx, "add", map[string]any{"a": 2, "b": 3})
	out, _ := mcp.DecodeStructured[AddOut](res)
	fmt.Println("sum:", out.Sum, "text:", res.Content[0].Text)

	_, err := c.CallTool(ctx, "add", map[string]any{"a": "two"})
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		fmt.Println("tool error:", se.Code)
	}
	_, err = c.CallTool(ctx, "subtract", nil)
	var rpcErr *mcp.Error
	if errors.As(err, &rpcErr) {
		fmt.Println("protocol error:", rpcErr.Code)
	}

	c.Close()
	fmt.Println("server stopped:", <-done)
	// Output:
	// negotiated 2025-11-25 with calc
	// sum: 5 text: {"sum":5}
	// tool error: INVALID_ARGUMENT
	// protocol error: -32602
	// server stopped: <nil>
}
