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

// clientFromMeta tells clients apart by _meta["client"] (a stand-in for
// DefaultClientKey, which uses the bearer token's subject or the session).
func clientFromMeta(_ context.Context, tc *mcp.ToolCall) string {
	s, _ := tc.Meta["client"].(string)
	return s
}

// describe prints a call's outcome.
func describe(res *mcp.CallToolResult, err error) string {
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s %v retryable=%v", se.Code, se.Details["limit"], se.Retryable)
	}
	if err != nil {
		return err.Error()
	}
	return res.Content[0].Text
}

// A rate limit of 2 calls per second, in bursts of up to 2, for each
// client: the third call at once is refused with a hint of when to retry;
// another client has its own bucket; after the hinted wait, calls pass
// again.
func ExampleRateLimiter() {
	reg := registry.New(nil)
	registry.MustRegister(reg, "greet", "Greets someone.", func(ctx context.Context, in greetIn) (string, error) {
		return "hello " + in.Name, nil
	}, nil)
	now := time.Date(2025, 11, 25, 12, 0, 0, 0, time.UTC)
	chain := middleware.Standard(reg, &middleware.StandardOptions{
		ClientKey: clientFromMeta,
		RateLimit: &middleware.RateLimitOptions{
			PerClient: middleware.Rate{Calls: 2, Per: time.Second},
			Now:       func() time.Time { return now },
		},
	})
	greet := func(client string) {
		res, err := chain.CallTool(context.Background(), &mcp.ToolCall{Name: "greet",
			Arguments: json.RawMessage(`{"name":"` + client + `"}`), Meta: mcp.Meta{"client": client}})
		var se *mcp.StructuredError
		if errors.As(err, &se) {
			fmt.Printf("%s: %s, retry after %vms (retryable=%v)\n", client, se.Code, se.Details["retryAfterMs"], se.Retryable)
			return
		}
		fmt.Printf("%s: %s\n", client, res.Content[0].Text)
	}
	greet("ann")
	greet("ann")
	greet("ann")
	greet("bob")
	now = now.Add(500 * time.Millisecond)
	greet("ann")
	// Output:
	// ann: hello ann
	// ann: hello ann
	// ann: RATE_LIMITED, retry after 500ms (retryable=true)
	// bob: hello bob
	// ann: hello ann
}

// Four slots, two per client: a greedy client that holds its two gets
// RESOURCE_EXHAUSTED at once for a third, while a polite client is still
// served.
func ExampleLimiter_fairShare() {
	reg := registry.New(nil)
	started, release := make(chan struct{}), make(chan struct{})
	if err := reg.AddTool(&mcp.Tool{Name: "crunch", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-release
			return mcp.TextResult("crunched"), nil
		}, nil); err != nil {
		panic(err)
	}
	registry.MustRegister(reg, "greet", "Greets someone.", func(ctx context.Context, in greetIn) (string, error) {
		return "hello " + in.Name, nil
	}, nil)
	lim := middleware.NewLimiterWith(&middleware.LimiterOptions{Max: 4, ClientKey: clientFromMeta})
	chain := middleware.Standard(reg, &middleware.StandardOptions{Limiter: lim})
	as := func(client, tool string) *mcp.ToolCall {
		return &mcp.ToolCall{Name: tool, Arguments: json.RawMessage(`{"name":"` + client + `"}`), Meta: mcp.Meta{"client": client}}
	}
	ctx := context.Background()

	fmt.Println("slots:", lim.Max(), "per client:", lim.PerClient())
	done := make(chan string)
	for range 2 {
		go func() { done <- describe(chain.CallTool(ctx, as("greedy", "crunch"))) }()
		<-started
	}
	fmt.Println("greedy, third call:", describe(chain.CallTool(ctx, as("greedy", "crunch"))))
	fmt.Println("polite:", describe(chain.CallTool(ctx, as("polite", "greet"))))
	fmt.Println("in use:", lim.InUse(), "greedy holds:", lim.ClientInUse("greedy"))
	close(release)
	fmt.Println("greedy, first calls:", <-done, "and", <-done)
	// Output:
	// slots: 4 per client: 2
	// greedy, third call: RESOURCE_EXHAUSTED maxConcurrentPerClient retryable=true
	// polite: hello polite
	// in use: 2 greedy holds: 2
	// greedy, first calls: crunched and crunched
}

// A result over the response limits is replaced by an error that names
// the limit: nothing is truncated.
func ExampleResponseLimit() {
	reg := registry.New(nil)
	type listOut struct {
		Items []int `json:"items"`
	}
	registry.MustRegister(reg, "list", "Lists n numbers.", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (listOut, error) {
		return listOut{Items: make([]int, in.N)}, nil
	}, nil)
	chain := middleware.Standard(reg, &middleware.StandardOptions{MaxArrayItems: 3})
	for _, n := range []string{"3", "4"} {
		res, err := chain.CallTool(context.Background(), &mcp.ToolCall{Name: "list", Arguments: json.RawMessage(`{"n":` + n + `}`)})
		var se *mcp.StructuredError
		if errors.As(err, &se) {
			fmt.Println(n, "→", se.Code, se.Details["limit"], se.Details["path"])
			continue
		}
		fmt.Println(n, "→", string(res.StructuredContent))
	}
	// Output:
	// 3 → {"items":[0,0,0]}
	// 4 → RESOURCE_EXHAUSTED maxArrayItems /structuredContent/items
}
