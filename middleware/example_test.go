package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

type greetIn struct {
	Name string `json:"name"`
}

// The first middleware listed is the outermost; Use appends inside the ones
// already there; Dispatch, which runs the tool's handler, is always last.
func ExampleChain_order() {
	reg := registry.New(nil)
	registry.MustRegister(reg, "greet", "Greets someone.", func(ctx context.Context, in greetIn) (string, error) {
		fmt.Println("    handler")
		return "hello " + in.Name, nil
	}, nil)

	stage := func(name string) middleware.Middleware {
		return func(next middleware.Handler) middleware.Handler {
			return func(ctx context.Context, c *middleware.Call) (*mcp.CallToolResult, error) {
				fmt.Println(name, "before")
				defer fmt.Println(name, "after")
				return next(ctx, c)
			}
		}
	}
	chain := middleware.New(reg, stage("outer")).Use(stage(" middle"), stage("  inner"))

	res, err := chain.CallTool(context.Background(), &mcp.ToolCall{Name: "greet", Arguments: json.RawMessage(`{"name":"keel"}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// outer before
	//  middle before
	//   inner before
	//     handler
	//   inner after
	//  middle after
	// outer after
	// hello keel
}

type printSink struct{}

func (printSink) Enter(_ context.Context, ev middleware.ToolEnterEvent) error {
	fmt.Printf("enter %s %s\n", ev.Tool, ev.Args)
	return nil
}

func (printSink) Exit(_ context.Context, ev middleware.ToolExitEvent) error {
	fmt.Printf("exit  %s %s in %v\n", ev.Tool, ev.Outcome, ev.Duration)
	return nil
}

// Standard is the chain in the tools/call processing order. Only calls that
// pass validation reach the audit sink.
func ExampleStandard() {
	reg := registry.New(nil)
	registry.MustRegister(reg, "greet", "Greets someone.", func(ctx context.Context, in greetIn) (string, error) {
		return "hello " + in.Name, nil
	}, nil)
	clock := time.Date(2025, 11, 25, 0, 0, 0, 0, time.UTC)
	chain := middleware.Standard(reg, &middleware.StandardOptions{
		MaxConcurrent: 4,
		AuditSink:     printSink{},
		Now:           func() time.Time { clock = clock.Add(time.Millisecond); return clock },
	})
	ctx := context.Background()

	res, _ := chain.CallTool(ctx, &mcp.ToolCall{Name: "greet", Arguments: json.RawMessage(`{"name":"keel"}`)})
	fmt.Println(res.Content[0].Text)

	_, err := chain.CallTool(ctx, &mcp.ToolCall{Name: "greet", Arguments: json.RawMessage(`{"name":7}`)})
	var se *mcp.StructuredError
	errors.As(err, &se)
	fmt.Println(se.Code)

	_, err = chain.CallTool(ctx, &mcp.ToolCall{Name: "shout", Arguments: json.RawMessage(`{}`)})
	var rpc *mcp.Error
	errors.As(err, &rpc)
	fmt.Println(rpc.Code, rpc.Message)
	// Output:
	// enter greet {"name":"keel"}
	// exit  greet success in 1ms
	// hello keel
	// INVALID_ARGUMENT
	// -32602 unknown tool "shout"
}

// The built-in server_ping tool, with a fixed clock.
func ExampleRegisterPingTool() {
	reg := registry.New(nil)
	boot := time.Date(2025, 11, 25, 0, 0, 0, 0, time.UTC)
	err := middleware.RegisterPingTool(reg, &middleware.PingOptions{
		Version: "1.0.0",
		Mode:    middleware.ModeTest,
		Start:   boot,
		Now:     func() time.Time { return boot.Add(1234567 * time.Microsecond) },
	})
	if err != nil {
		panic(err)
	}
	res, err := middleware.Standard(reg, nil).CallTool(context.Background(), &mcp.ToolCall{Name: "server_ping", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.StructuredContent))
	// Output:
	// {"version":"1.0.0","mode":"TEST","uptime_ms":1234}
}
