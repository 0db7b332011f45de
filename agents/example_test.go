package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// A counter agent: each message adds its payload to the count kept in the
// agent's state. Messages to one agent are processed in order, one at a
// time, so the read-modify-write needs no lock.
func Example() {
	c := agents.NewCoordinator(&agents.Options{
		OnStateChange: func(id string, state map[string]any) {
			fmt.Println("state of", id, "is now", state)
		},
	})
	err := c.Register("counter", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		var add, n float64
		if err := msg.DecodePayload(&add); err != nil {
			return nil, err
		}
		if _, err := ac.State.Decode("n", &n); err != nil {
			return nil, err
		}
		n += add
		return n, ac.State.Set("n", n)
	}, &agents.AgentInfo{Description: "Adds numbers"})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	for _, add := range []int{1, 2, 3} {
		n, err := c.Send(ctx, "counter", agents.Message{Type: "add", Payload: add})
		fmt.Println("sum:", n, err)
	}
	_, err = c.Send(ctx, "nobody", agents.Message{Type: "add"})
	fmt.Println(errors.Is(err, agents.ErrAgentNotFound), err)

	fmt.Println(c.Shutdown(ctx, agents.ShutdownDrain))
	_, err = c.Send(ctx, "counter", agents.Message{Type: "add", Payload: 1})
	fmt.Println(errors.Is(err, agents.ErrShuttingDown))
	// Output:
	// state of counter is now map[n:1]
	// sum: 1 <nil>
	// state of counter is now map[n:3]
	// sum: 3 <nil>
	// state of counter is now map[n:6]
	// sum: 6 <nil>
	// true agents: agent "nobody" is not registered
	// <nil>
	// true
}

// RegisterTools exposes the agents as MCP tools; here they are called
// through the registry directly, as a Server would.
func ExampleRegisterTools() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := agents.NewCoordinator(&agents.Options{Now: func() time.Time { return now }})
	defer c.Shutdown(context.Background(), agents.ShutdownReject)
	_ = c.Register("greeter", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		var in struct {
			Name string `json:"name"`
		}
		if err := msg.DecodePayload(&in); err != nil {
			return nil, err
		}
		return map[string]string{"greeting": "Hello, " + in.Name + "!"}, nil
	}, &agents.AgentInfo{Name: "Greeter", Description: "Greets people", Capabilities: []string{"greet"}})

	reg := registry.New(nil)
	if err := agents.RegisterTools(reg, c, nil); err != nil {
		panic(err)
	}
	call := func(tool, args string) {
		res, err := reg.CallTool(context.Background(), &mcp.ToolCall{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(string(res.StructuredContent))
	}
	call(agents.ToolAgentList, `{}`)
	call(agents.ToolAgentRun, `{"agentId":"greeter","input":{"name":"Ada"}}`)
	call(agents.ToolAgentRun, `{"agentId":"nobody"}`)
	// Output:
	// {"agents":[{"agentId":"greeter","name":"Greeter","description":"Greets people","enabled":true,"capabilities":["greet"],"queueLength":0}],"total":1}
	// {"success":true,"agentId":"greeter","output":{"greeting":"Hello, Ada!"},"durationMs":0,"totalDurationMs":0}
	// error: NOT_FOUND: agent "nobody" is not registered
}
