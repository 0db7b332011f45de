package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// roundSources serves, for each method that takes input rounds, one
// target named "ask" (the tool and prompt "ask", the resource
// test://ask, the custom method acme/ask) whose handler needs the
// client's name: without an Input it asks for it (InputRequired), with
// one it answers "Hello, " and the name. Every run of a handler is
// recorded, and so is every pass through ServerOptions.Middleware and
// through the tool's own chain (a ToolSource around the tool).
type roundSources struct {
	mu    sync.Mutex
	runs  map[string][]roundRun // by method
	chain map[string]int        // passes through ServerOptions.Middleware, by method
	tool  int                   // passes through the tool's chain
}

// roundRun is what one run of a handler saw.
type roundRun struct {
	input  bool // it had an Input
	prog   *mcp.Progress
	call   *mcp.ToolCall
	runID  string
	corr   string
	logger *slog.Logger
}

const roundMethod = "acme/ask"

func newRoundSources() *roundSources {
	return &roundSources{runs: map[string][]roundRun{}, chain: map[string]int{}}
}

// ask is the handler's body: it records the run and asks, or answers.
func (s *roundSources) ask(ctx context.Context, method string, call *mcp.ToolCall) (string, error) {
	in := mcp.InputFromContext(ctx)
	run := roundRun{input: in != nil, prog: mcp.ProgressFromContext(ctx), call: call}
	if call != nil {
		run.runID, run.corr, run.logger = call.RunID, call.CorrelationID, call.Logger
	}
	s.mu.Lock()
	s.runs[method] = append(s.runs[method], run)
	s.mu.Unlock()
	er, ok := in.Elicit("name")
	if !ok {
		return "", mcp.InputRequired(map[string]mcp.InputRequest{"name": askName}, []byte(method))
	}
	return fmt.Sprintf("Hello, %v (state %s)", er.Content["name"], in.State), nil
}

func (s *roundSources) snapshot(method string) ([]roundRun, int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]roundRun(nil), s.runs[method]...), s.chain[method], s.tool
}

// roundTools is the tool "ask" behind its own chain (roundToolChain).
type roundTools struct{ s *roundSources }

func (roundTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (t roundTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	text, err := t.s.ask(ctx, "tools/call", call)
	if err != nil {
		return nil, err
	}
	return mcp.TextResult(text), nil
}

// roundToolChain stands for a tool's middleware chain: it counts the
// calls that pass through it.
type roundToolChain struct{ roundTools }

func (c roundToolChain) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	c.s.mu.Lock()
	c.s.tool++
	c.s.mu.Unlock()
	return c.roundTools.CallTool(ctx, call)
}

type roundPrompts struct{ s *roundSources }

func (roundPrompts) ListPrompts(context.Context) ([]*mcp.Prompt, error) {
	return []*mcp.Prompt{{Name: "ask"}}, nil
}

func (p roundPrompts) GetPrompt(ctx context.Context, _ *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	text, err := p.s.ask(ctx, "prompts/get", nil)
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Text(text))}}, nil
}

type roundResources struct{ s *roundSources }

func (roundResources) ListResources(context.Context) ([]*mcp.Resource, error) {
	return []*mcp.Resource{{URI: "test://ask", Name: "ask"}}, nil
}

func (roundResources) ListResourceTemplates(context.Context) ([]*mcp.ResourceTemplate, error) {
	return nil, nil
}

func (r roundResources) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	text, err := r.s.ask(ctx, "resources/read", nil)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{mcp.TextResourceContents(p.URI, "text/plain", text)}}, nil
}

// roundOptions serves s's targets; every requestState is accepted once
// (StateSingleUse), so that a state verified twice in one request would
// be refused the second time.
func roundOptions(s *roundSources) *mcp.ServerOptions {
	o := mcptest.ServerOptions(roundToolChain{roundTools{s}})
	o.StateKey = []byte("0123456789abcdef0123456789abcdef")
	o.StateSingleUse = true
	o.Prompts = roundPrompts{s}
	o.Resources = roundResources{s}
	o.Methods = map[string]mcp.MethodHandler{roundMethod: func(ctx context.Context, _ *mcp.Request) (any, error) {
		text, err := s.ask(ctx, roundMethod, nil)
		if err != nil {
			return nil, err
		}
		return map[string]any{"text": text}, nil
	}}
	o.InputMethods = []string{roundMethod}
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			s.mu.Lock()
			s.chain[req.Method]++
			s.mu.Unlock()
			return next(ctx, req)
		}
	}}
	return o
}

// roundCases are the methods that take input rounds, with params that
// name their target, and how to read the text of their answer (a 2026
// result as raw JSON).
var roundCases = []struct {
	method, params string
	text           func(res map[string]any) any
}{
	{"tools/call", `"name":"ask","arguments":{"n":1}`, func(res map[string]any) any {
		return res["content"].([]any)[0].(map[string]any)["text"]
	}},
	{"prompts/get", `"name":"ask","arguments":{"n":"1"}`, func(res map[string]any) any {
		return res["messages"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"]
	}},
	{"resources/read", `"uri":"test://ask"`, func(res map[string]any) any {
		return res["contents"].([]any)[0].(map[string]any)["text"]
	}},
	{roundMethod, `"n":1`, func(res map[string]any) any { return res["text"] }},
}

// The input rounds of 2026-07-28 run around the handler of every method
// whose row declares them, built-in or custom, alike: the handler gets no
// Input and asks; the request is answered input_required; the retry's
// answers (its requestState checked once, before the handler runs) reach
// the handler as its Input. The middleware chain runs once per request,
// the tool's own chain once per run of the tool.
func TestInputRoundsRunAroundTheHandler2026(t *testing.T) {
	for _, tc := range roundCases {
		t.Run(tc.method, func(t *testing.T) {
			s := newRoundSources()
			c := startPlain(t, roundOptions(s))
			c.send(`{"jsonrpc":"2.0","id":1,"method":"` + tc.method + `","params":{` + tc.params + `,` + modernMeta + `}}`)
			m := c.recv()
			res, ok := m["result"].(map[string]any)
			require.True(t, ok, "%v", m)
			require.Equal(t, "input_required", res["resultType"], "%v", res)
			assert.Contains(t, res["inputRequests"], "name")
			state, _ := res["requestState"].(string)
			require.NotEmpty(t, state)

			answers := `"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + state + `"`
			c.send(`{"jsonrpc":"2.0","id":2,"method":"` + tc.method + `","params":{` + tc.params + `,` + answers + `,` + modernMeta + `}}`)
			m = c.recv()
			res, ok = m["result"].(map[string]any)
			require.True(t, ok, "%v", m)
			assert.Equal(t, "complete", res["resultType"])
			assert.Equal(t, "Hello, Ada (state "+tc.method+")", tc.text(res))

			runs, chain, tool := s.snapshot(tc.method)
			require.Len(t, runs, 2)
			assert.False(t, runs[0].input, "the first run has no Input")
			assert.True(t, runs[1].input, "the retry's run has its Input")
			assert.Equal(t, 2, chain, "the middleware chain runs once per request")
			if tc.method == "tools/call" {
				assert.Equal(t, 2, tool, "the tool's chain runs once per run")
			}
		})
	}
}

// Errors keep their precedence: a params-shape error is answered before
// the requestState is checked, whatever the state; a state that does not
// verify is refused before the handler runs.
func TestInputRoundsErrorPrecedence2026(t *testing.T) {
	const bogus = `"requestState":"eyJ4IjoxfQ.AAAA"`
	tests := []struct {
		name, method, params, msg string
	}{
		{"tools/call without a name", "tools/call", `"arguments":{},` + bogus, "name is required"},
		{"tools/call with arguments not an object", "tools/call", `"name":"ask","arguments":[1],` + bogus, "arguments must be an object"},
		{"tools/call with a bad state", "tools/call", `"name":"ask",` + bogus, "integrity"},
		{"prompts/get without a name", "prompts/get", bogus, "name is required"},
		{"prompts/get with a bad state", "prompts/get", `"name":"ask",` + bogus, "integrity"},
		{"resources/read without a uri", "resources/read", bogus, "resource URI is empty"},
		{"resources/read with a bad state", "resources/read", `"uri":"test://ask",` + bogus, "integrity"},
		{"custom method with a requestState not a string", roundMethod, `"requestState":1`, "requestState must be a string"},
		{"custom method with a bad state", roundMethod, `"n":1,` + bogus, "integrity"},
	}
	s := newRoundSources()
	c := startPlain(t, roundOptions(s))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s,%s}}`, i+1, tt.method, tt.params, modernMeta))
			m := c.recv()
			e, ok := m["error"].(map[string]any)
			require.True(t, ok, "want an error, got %v", m)
			assert.Equal(t, float64(mcp.CodeInvalidParams), e["code"])
			assert.Contains(t, e["message"], tt.msg)
		})
	}
	for _, tc := range roundCases {
		runs, _, _ := s.snapshot(tc.method)
		assert.Empty(t, runs, "%s: no handler ran", tc.method)
	}
}

// On a 2026-07-28 tools/call, the tasks extension's refusal of a tool
// that runs as a task only comes before the requestState is checked; with
// the extension, the state is checked (and refused) before the call runs.
// A call on the task path takes the Input its round checked: with each
// state accepted once, a state checked twice would be refused.
func TestInputRoundsOfModernTaskCalls(t *testing.T) {
	const bogus = `"requestState":"eyJ4IjoxfQ.AAAA"`
	c := startTaskServer(t, &mcp.TaskOptions{})
	for _, tt := range []struct {
		name, params, caps string
		code               float64
	}{
		{"task-only tool without the extension", `"name":"required",` + bogus, noTaskCaps, -32021},
		{"task-only tool with the extension", `"name":"required",` + bogus, taskCaps, -32602},
		{"plain tool with the extension", `"name":"plain",` + bogus, taskCaps, -32602},
		{"optional tool without the extension", `"name":"quick",` + bogus, noTaskCaps, -32602},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := c.call("tools/call", tt.params, tt.caps)
			e, ok := m["error"].(map[string]any)
			require.True(t, ok, "want an error, got %v", m)
			assert.Equal(t, tt.code, e["code"])
		})
	}

	t.Run("a task call takes its round's Input", func(t *testing.T) {
		c := startTaskServerWith(t, &mcp.TaskOptions{}, func(o *mcp.ServerOptions) { o.StateSingleUse = true })
		r1 := c.result("tools/call", `"name":"mrtr"`, taskCaps)
		require.Equal(t, "input_required", r1["resultType"])
		answers := `"inputResponses":{"name":{"action":"accept","content":{"name":"Alice"}}},"requestState":"` + r1["requestState"].(string) + `"`
		r2 := c.result("tools/call", `"name":"mrtr",`+answers, taskCaps)
		assert.Equal(t, "task", r2["resultType"], "the state is checked once")
		d := c.await(r2["taskId"].(string), mcp.TaskStatusCompleted)
		assert.Equal(t, "Hello, Alice!", firstText(d["result"].(map[string]any)), "the task ran with its round's Input")
		e, ok := c.call("tools/call", `"name":"mrtr",`+answers, taskCaps)["error"].(map[string]any)
		require.True(t, ok, "a state is accepted once")
		assert.Contains(t, e["message"], "used already")
	})
}

// BenchmarkServeInputMethods2026 serves, over the in-memory transport,
// each method whose row declares input rounds, in one round (no input is
// asked for), as a 2026-07-28 request; BenchmarkServeInputMethods2025 the
// same on a 2025 session. Their allocations per request are what the
// rounds around the handler cost a request that needs none.
func BenchmarkServeInputMethods2026(b *testing.B) { benchInputMethods(b, false) }

// benchInputMethods serves the benchmark's requests, on a 2025-11-25
// session (session) or as 2026-07-28 requests.
func benchInputMethods(b *testing.B, session bool) {
	meta := "," + modernMeta
	if session {
		meta = ""
	}
	params := map[string]string{
		"tools/call":     `{"name":"echo","arguments":{"message":"hi"}` + meta + `}`,
		"prompts/get":    `{"name":"greet","arguments":{"who":"ann"}` + meta + `}`,
		"resources/read": `{"uri":"file:///a"` + meta + `}`,
		"acme/echo":      `{"message":"hi"` + meta + `}`,
	}
	for _, method := range []string{"tools/call", "prompts/get", "resources/read", "acme/echo"} {
		b.Run(method, func(b *testing.B) {
			o := paramsSeenOptions(&paramsSeen{mw: map[string]any{}, again: map[string]bool{}}, false)
			o.Methods = map[string]mcp.MethodHandler{"acme/echo": func(context.Context, *mcp.Request) (any, error) {
				return map[string]any{"ok": true}, nil
			}}
			o.InputMethods = []string{"acme/echo"}
			ct, st := transport.NewPipe(nil)
			srv := mcp.NewServer(o)
			done := make(chan struct{})
			go func() { defer close(done); _ = srv.Run(context.Background(), st) }()
			b.Cleanup(func() { ct.Close(); <-done })
			ctx := context.Background()
			roundTrip := func(line string) []byte {
				if err := ct.Write(ctx, []byte(line)); err != nil {
					b.Fatal(err)
				}
				msg, err := ct.Read(ctx)
				if err != nil {
					b.Fatal(err)
				}
				return msg
			}
			if session {
				roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
				if err := ct.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				msg := roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"` + method + `","params":` + params[method] + `}`)
				if !bytes.Contains(msg, []byte(`"result"`)) {
					b.Fatalf("answer %s", msg)
				}
			}
		})
	}
}

// The input target's reader and the handler read the params of
// prompts/get and resources/read through the request's Params cache: the
// source gets the value decoded once, which a middleware asking Params
// after the handler gets too.
func TestInputTargetAndHandlerShareParams(t *testing.T) {
	s := &paramsSeen{mw: map[string]any{}, again: map[string]bool{}}
	after := map[string]any{}
	var mu sync.Mutex
	o := paramsSeenOptions(s, false)
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			p, _, ok := decodeBuiltin(req)
			mu.Lock()
			if ok {
				after[req.Method] = p
			}
			mu.Unlock()
			return res, err
		}
	}}
	c := startPlain(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"ann"},` + modernMeta + `}}`)
	require.Contains(t, c.recv(), "result")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a",` + modernMeta + `}}`)
	require.Contains(t, c.recv(), "result")
	mu.Lock()
	defer mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Same(t, s.prompt, after["prompts/get"], "prompts/get: decoded once")
	assert.Same(t, s.resource, after["resources/read"], "resources/read: decoded once")
}
