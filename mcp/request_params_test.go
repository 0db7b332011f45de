package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

type greetParams struct {
	Name  string `json:"name"`
	Times int    `json:"times"`
}

func TestParamsDecodesStrictly(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         greetParams
		errPart      string // "" = no error
	}{
		{"members", `{"name":"ann","times":2}`, greetParams{Name: "ann", Times: 2}, ""},
		{"absent params are the zero value", ``, greetParams{}, ""},
		{"null params are the zero value", `null`, greetParams{}, ""},
		{"unknown members are ignored", `{"name":"ann","x":1}`, greetParams{Name: "ann"}, ""},
		{"a wrong type names the member", `{"name":5}`, greetParams{}, `"/name" must be a string, not a number`},
		{"names are case-sensitive", `{"Name":"ann"}`, greetParams{}, ""},
		{"a duplicate name is refused", `{"name":"a","name":"b"}`, greetParams{}, "Invalid params"},
		{"invalid UTF-8 is refused", "{\"name\":\"\xff\"}", greetParams{}, "Invalid params"},
		{"params that are not an object", `[1]`, greetParams{}, "must be an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &mcp.Request{Method: "acme/greet"}
			if tc.params != "" {
				req.Params = json.RawMessage(tc.params)
			}
			p, err := mcp.Params[greetParams](req)
			if tc.errPart != "" {
				var e *mcp.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, int64(mcp.CodeInvalidParams), e.Code)
				assert.Contains(t, e.Message, tc.errPart)
				assert.Equal(t, greetParams{}, *p, "with an error, the zero value, never half read")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, *p)
		})
	}
}

// countingParams counts how often it is decoded.
type countingParams struct{ Name string }

var countingDecodes atomic.Int32

func (c *countingParams) UnmarshalJSON(b []byte) error {
	countingDecodes.Add(1)
	var w struct {
		Name string `json:"name"`
	}
	err := json.Unmarshal(b, &w)
	c.Name = w.Name
	return err
}

// TestParamsDecodedOncePerRequest: a middleware and the handler of a
// custom method ask for the same params type; they are decoded once per
// request, and both get the same value. A second type decodes apart.
func TestParamsDecodedOncePerRequest(t *testing.T) {
	countingDecodes.Store(0)
	var seen atomic.Pointer[countingParams]
	o := modernOptions(&modernTools{})
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method != "acme/greet" {
				return next(ctx, req)
			}
			p, err := mcp.Params[countingParams](req)
			if err != nil {
				return nil, err
			}
			if p.Name == "" {
				return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: name is required"}
			}
			seen.Store(p)
			return next(ctx, req)
		}
	}}
	o.Methods = map[string]mcp.MethodHandler{
		"acme/greet": func(ctx context.Context, req *mcp.Request) (any, error) {
			p, err := mcp.Params[countingParams](req)
			if err != nil {
				return nil, err
			}
			if p != seen.Load() {
				return nil, errors.New("the handler got another value than the middleware")
			}
			g, err := mcp.Params[greetParams](req) // another type: its own decoding
			if err != nil {
				return nil, err
			}
			return map[string]any{"hello": p.Name, "times": g.Times}, nil
		},
	}
	c := startPlain(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/greet","params":{"name":"ann","times":3,` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, "ann", res["hello"])
	assert.Equal(t, float64(3), res["times"])
	assert.Equal(t, int32(1), countingDecodes.Load(), "decoded once for the middleware and the handler")

	// The middleware refuses bad params with the error Params gives.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/greet","params":{"name":5,` + modernMeta + `}}`)
	e := c.recv()["error"].(map[string]any)
	assert.Equal(t, float64(mcp.CodeInvalidParams), e["code"])
	assert.Contains(t, e["message"], "Invalid params")
}

// paramsSeen records what a middleware decoded with Params and what the
// built-in sources were handed, per method, for one request at a time.
type paramsSeen struct {
	mu        sync.Mutex
	mw        map[string]any // method → the *T the middleware got
	again     map[string]bool
	tool      *mcp.ToolCall
	prompt    *mcp.GetPromptParams
	resource  *mcp.ReadResourceParams
	complete  *mcp.CompleteParams
	replaceTo json.RawMessage // tools/call: params the middleware sets after decoding
}

// decodeBuiltin decodes the params of a built-in method among tools/call,
// prompts/get, resources/read and completion/complete with Params (ok
// false for another method).
func decodeBuiltin(req *mcp.Request) (p any, err error, ok bool) {
	switch req.Method {
	case "tools/call":
		p, err = mcp.Params[mcp.CallToolParams](req)
	case "prompts/get":
		p, err = mcp.Params[mcp.GetPromptParams](req)
	case "resources/read":
		p, err = mcp.Params[mcp.ReadResourceParams](req)
	case "completion/complete":
		p, err = mcp.Params[mcp.CompleteParams](req)
	default:
		return nil, nil, false
	}
	return p, err, true
}

// decodeFirst is a middleware that decodes the params of the four
// built-in methods with Params before their handlers run, and checks
// after them that asking again gives the same value.
func (s *paramsSeen) decodeFirst(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, req *mcp.Request) (any, error) {
		p, err, ok := decodeBuiltin(req)
		if !ok {
			return next(ctx, req)
		}
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.mw[req.Method] = p
		replace := s.replaceTo
		s.mu.Unlock()
		if replace != nil && req.Method == "tools/call" {
			req.Params = replace
		}
		res, err := next(ctx, req)
		again, _, _ := decodeBuiltin(req)
		s.mu.Lock()
		s.again[req.Method] = again == p
		s.mu.Unlock()
		return res, err
	}
}

func (s *paramsSeen) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (s *paramsSeen) CallTool(_ context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	s.tool = call
	s.mu.Unlock()
	return mcp.TextResult(string(call.Arguments)), nil
}

func (s *paramsSeen) ListPrompts(context.Context) ([]*mcp.Prompt, error) {
	return []*mcp.Prompt{{Name: "greet"}}, nil
}

func (s *paramsSeen) GetPrompt(_ context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	s.mu.Lock()
	s.prompt = p
	s.mu.Unlock()
	return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{}}, nil
}

func (s *paramsSeen) ListResources(context.Context) ([]*mcp.Resource, error) {
	return []*mcp.Resource{{URI: "file:///a", Name: "a"}}, nil
}

func (s *paramsSeen) ListResourceTemplates(context.Context) ([]*mcp.ResourceTemplate, error) {
	return nil, nil
}

func (s *paramsSeen) ReadResource(_ context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	s.mu.Lock()
	s.resource = p
	s.mu.Unlock()
	text := "a"
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: p.URI, Text: &text}}}, nil
}

func (s *paramsSeen) Complete(_ context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	s.mu.Lock()
	s.complete = p
	s.mu.Unlock()
	return &mcp.CompleteResult{Completion: mcp.Completion{Values: []string{"x"}}}, nil
}

// paramsSeenOptions returns options serving s's tools, prompts, resources
// and completions, with s.decodeFirst as middleware when decode is set.
func paramsSeenOptions(s *paramsSeen, decode bool) *mcp.ServerOptions {
	o := modernOptions(&modernTools{})
	o.Tools, o.Prompts, o.Resources, o.Completions = s, s, s, s
	if decode {
		o.Middleware = []mcp.Middleware{s.decodeFirst}
	}
	return o
}

// checkBuiltinsReadMiddlewareParams sends tools/call, prompts/get,
// resources/read and completion/complete on c, each with meta (the
// revision's _meta members, or ""), after which a member "acme/trace"
// follows in _meta. With decode (the middleware decoded the params with
// Params), each source must get the very value the middleware decoded
// (tools/call: the same argument bytes, and a _meta without the
// revision's members), so that the handler did not decode again; and the
// middleware asking again after the handler gets the same value too.
func checkBuiltinsReadMiddlewareParams(t *testing.T, c *rawConn, s *paramsSeen, meta string, decode bool) {
	t.Helper()
	if meta != "" {
		meta += ","
	}
	trace := `"_meta":{` + meta + `"acme/trace":"t-1"}`
	lines := []struct{ method, params string }{
		{"tools/call", `{"name":"echo","arguments":{"message":"hi"},` + trace + `}`},
		{"prompts/get", `{"name":"greet","arguments":{"who":"ann"},` + trace + `}`},
		{"resources/read", `{"uri":"file:///a",` + trace + `}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"},"context":{"arguments":{"x":"y"}},` + trace + `}`},
	}
	for i, l := range lines {
		c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"` + l.method + `","params":` + l.params + `}`)
		m := c.recv()
		require.Contains(t, m, "result", "%s: %v", l.method, m)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotNil(t, s.tool)
	assert.Equal(t, `{"message":"hi"}`, string(s.tool.Arguments))
	assert.Equal(t, mcp.Meta{"acme/trace": "t-1"}, s.tool.Meta, "ToolCall.Meta leaves the revision's members out")
	assert.Equal(t, map[string]string{"who": "ann"}, s.prompt.Arguments)
	assert.Equal(t, "file:///a", s.resource.URI)
	require.NotNil(t, s.complete.Context)
	if !decode {
		assert.Empty(t, s.mw)
		return
	}
	call := s.mw["tools/call"].(*mcp.CallToolParams)
	assert.Same(t, &call.Arguments[0], &s.tool.Arguments[0], "tools/call: the arguments the middleware decoded, not decoded again")
	assert.Same(t, s.mw["prompts/get"], s.prompt, "prompts/get: the middleware's value")
	assert.Same(t, s.mw["resources/read"], s.resource, "resources/read: the middleware's value")
	assert.Same(t, s.mw["completion/complete"], s.complete, "completion/complete: the middleware's value")
	for _, l := range lines {
		assert.True(t, s.again[l.method], "%s: Params after the handler gives the value decoded before it", l.method)
	}
}

// TestBuiltinsReadMiddlewareParams: a middleware that decoded the params
// of a built-in method with Params spares its handler the decoding, on a
// 2026-07-28 request; without the middleware the handlers decode
// themselves, to the same values.
func TestBuiltinsReadMiddlewareParams(t *testing.T) {
	for _, decode := range []bool{true, false} {
		t.Run(map[bool]string{true: "middleware decodes", false: "handler decodes"}[decode], func(t *testing.T) {
			s := &paramsSeen{mw: map[string]any{}, again: map[string]bool{}}
			c := startPlain(t, paramsSeenOptions(s, decode))
			checkBuiltinsReadMiddlewareParams(t, c, s, modernMeta[len(`"_meta":{`):len(modernMeta)-1], decode)
		})
	}
}

// TestParamsSetAnewAreDecodedAnew: a middleware that decoded the params
// of tools/call and then sets req.Params to other bytes gets its new
// params served: the value decoded from the old ones is not used.
func TestParamsSetAnewAreDecodedAnew(t *testing.T) {
	s := &paramsSeen{mw: map[string]any{}, again: map[string]bool{},
		replaceTo: json.RawMessage(`{"name":"echo","arguments":{"message":"rewritten"},` + modernMeta + `}`)}
	c := startPlain(t, paramsSeenOptions(s, true))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, `{"message":"rewritten"}`, res["content"].([]any)[0].(map[string]any)["text"])
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, `{"message":"hi"}`, string(s.mw["tools/call"].(*mcp.CallToolParams).Arguments), "the middleware's value is left as decoded")
	assert.False(t, s.again["tools/call"], "Params after the handler decodes the new params")
}

// BenchmarkBuiltinParams serves each built-in method that reads its
// params through Params, over the in-memory transport, without a
// middleware and with one that decodes the params first (decodeFirst):
// the ratio of the two is what a middleware's decoding costs the request.
func BenchmarkBuiltinParams(b *testing.B) {
	lines := map[string]string{
		"tools/call":          `{"name":"echo","arguments":{"message":"hi"},` + modernMeta + `}`,
		"prompts/get":         `{"name":"greet","arguments":{"who":"ann"},` + modernMeta + `}`,
		"resources/read":      `{"uri":"file:///a",` + modernMeta + `}`,
		"completion/complete": `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"},` + modernMeta + `}`,
	}
	for _, method := range []string{"tools/call", "prompts/get", "resources/read", "completion/complete"} {
		for _, decode := range []bool{false, true} {
			b.Run(method+map[bool]string{false: "/handler", true: "/middleware"}[decode], func(b *testing.B) {
				s := &paramsSeen{mw: map[string]any{}, again: map[string]bool{}}
				ct, st := transport.NewPipe(nil)
				srv := mcp.NewServer(paramsSeenOptions(s, decode))
				done := make(chan struct{})
				go func() { defer close(done); _ = srv.Run(context.Background(), st) }()
				b.Cleanup(func() { ct.Close(); <-done })
				ctx := context.Background()
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"` + method + `","params":` + lines[method] + `}`
					if err := ct.Write(ctx, []byte(line)); err != nil {
						b.Fatal(err)
					}
					msg, err := ct.Read(ctx)
					if err != nil || !bytes.Contains(msg, []byte(`"result"`)) {
						b.Fatalf("answer %s, %v", msg, err)
					}
				}
			})
		}
	}
}

// TestToolsCallAfterMiddlewareDecodeFailed: a _meta member only the
// revision reads (clientInfo) holds a number no Meta value can hold, so a
// middleware's Params[CallToolParams] fails; a middleware that goes on
// regardless leaves tools/call to read its params itself, and the call
// is answered as without the middleware.
func TestToolsCallAfterMiddlewareDecodeFailed(t *testing.T) {
	var decodeErr atomic.Pointer[error]
	s := &paramsSeen{mw: map[string]any{}, again: map[string]bool{}}
	o := paramsSeenOptions(s, false)
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if _, err := mcp.Params[mcp.CallToolParams](req); err != nil {
				decodeErr.Store(&err)
			}
			return next(ctx, req)
		}
	}}
	c := startPlain(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1","x":1e400},"acme/trace":"t-1"}}}`)
	m := c.recv()
	require.Contains(t, m, "result", "%v", m)
	require.NotNil(t, decodeErr.Load(), "the middleware's decoding failed")
	var e *mcp.Error
	require.ErrorAs(t, *decodeErr.Load(), &e)
	assert.Equal(t, int64(mcp.CodeInvalidParams), e.Code)
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, `{"message":"hi"}`, string(s.tool.Arguments))
	assert.Equal(t, mcp.Meta{"acme/trace": "t-1"}, s.tool.Meta)
}

// Params appended in place (the same first byte, a longer slice) are
// decoded anew, not served from the cache of the shorter ones.
func TestParamsAppendedInPlaceAreDecodedAnew(t *testing.T) {
	buf := make([]byte, 0, 64)
	buf = append(buf, `{"name":"ann"}`...)
	req := &mcp.Request{Method: "acme/greet", Params: json.RawMessage(buf)}
	p, err := mcp.Params[greetParams](req)
	require.NoError(t, err)
	require.Equal(t, "ann", p.Name)
	req.Params = append(req.Params[:len(req.Params)-1], `,"times":3}`...)
	p2, err := mcp.Params[greetParams](req)
	require.NoError(t, err)
	assert.Equal(t, 3, p2.Times, "params set anew (%s) decoded anew", req.Params)
}
