package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// orderRecorder is a Middleware that records what passes through it.
type orderRecorder struct{ name string }

func (r *orderRecorder) middleware(log *[]string, mu *sync.Mutex) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			mu.Lock()
			*log = append(*log, r.name+">"+req.Method)
			mu.Unlock()
			res, err := next(ctx, req)
			mu.Lock()
			*log = append(*log, r.name+"<"+req.Method)
			mu.Unlock()
			return res, err
		}
	}
}

// plainConn is a rawConn without schema checks, for custom messages the
// schema cannot know.
func startPlain(t *testing.T, opts *mcp.ServerOptions) *rawConn {
	t.Helper()
	ct, wait := mcptest.StartServer(t, opts, nil)
	t.Cleanup(func() { ct.Close(); _ = wait() })
	return &rawConn{t: t, tr: ct}
}

func TestMiddlewareCanAnswerAndRewrite(t *testing.T) {
	deny := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method == "prompts/list" || req.Method == "tools/list" && strings.Contains(string(req.Params), "deny") {
				return nil, &mcp.Error{Code: mcp.CodeInvalidRequest, Message: "denied by policy"}
			}
			res, err := next(ctx, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok { // results are plain values, rewritten in place
				lt.Tools = lt.Tools[:1]
			}
			return res, err
		}
	}
	o := modernOptions(&modernTools{})
	o.Middleware = []mcp.Middleware{deny}
	c := startRaw(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"deny",` + modernMeta + `}}`)
	m := c.recv()
	assert.Equal(t, "denied by policy", m["error"].(map[string]any)["message"])
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	m = c.recv()
	res := m["result"].(map[string]any)
	assert.Len(t, res["tools"], 1)
	assert.Equal(t, "complete", res["resultType"], "the modern answer is stamped after the middleware")
}

func TestCustomMethodNamesAreChecked(t *testing.T) {
	h := func(context.Context, *mcp.Request) (any, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		opts mcp.ServerOptions
		want string
	}{
		{"built-in method", mcp.ServerOptions{Methods: map[string]mcp.MethodHandler{"tools/call": h}}, "keel serves this method itself"},
		{"built-in notification", mcp.ServerOptions{Notifications: map[string]mcp.MethodHandler{"notifications/cancelled": h}}, "keel serves this method itself"},
		{"nil handler", mcp.ServerOptions{Methods: map[string]mcp.MethodHandler{"acme/x": nil}}, "is nil"},
		{"empty name", mcp.ServerOptions{Methods: map[string]mcp.MethodHandler{"": h}}, "empty method name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "NewServer must refuse the configuration")
				assert.Contains(t, r, tc.want)
			}()
			mcp.NewServer(&tc.opts)
		})
	}
}

// peerTools reports what a handler learns about its peer.
type peerTools struct{}

func (peerTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "peer", InputSchema: []byte(`{"type":"object"}`)}}, nil
}

func (peerTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	ss := mcp.SessionFromContext(ctx)
	req := mcp.RequestFromContext(ctx)
	_ = mcp.ReportProgress(ctx, 1, 2, "half way")
	return mcp.TextResult(strings.Join([]string{
		ss.ProtocolVersion(), req.ProtocolVersion(),
		boolWord(req.ClientCapabilities().Sampling != nil), req.ClientInfo().Name,
	}, " ")), nil
}

func boolWord(b bool) string {
	if b {
		return "sampling"
	}
	return "none"
}

// A protocol error on a request that carries _meta.correlationId echoes
// that id; without one, the connection's.
func TestProtocolErrorsEchoTheRequestCorrelationID(t *testing.T) {
	c := startRaw(t, modernOptions(&modernTools{}))
	// before initialize: NOT_INITIALIZED names the request's id
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"correlationId":"corr-early"}}}`)
	data := c.recv()["error"].(map[string]any)["data"].(map[string]any)
	assert.Equal(t, "corr-early", data["correlationId"])
	c.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"acme/missing","params":{"_meta":{"correlationId":"corr-1"}}}`)
	data = c.recv()["error"].(map[string]any)["data"].(map[string]any)
	assert.Equal(t, "corr-1", data["correlationId"])
	c.send(`{"jsonrpc":"2.0","id":4,"method":"acme/missing"}`)
	data = c.recv()["error"].(map[string]any)["data"].(map[string]any)
	assert.NotEmpty(t, data["correlationId"])
	assert.NotEqual(t, "corr-1", data["correlationId"], "the connection's id when the request names none")
}

// askingTools calls the client the 2025 way from its handler.
type askingTools struct{ err chan error }

func (askingTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "sample", InputSchema: []byte(`{"type":"object"}`)}}, nil
}

func (a askingTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	_, err := mcp.SessionFromContext(ctx).CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10})
	a.err <- err
	return mcp.TextResult("done"), nil
}

// A 2026-07-28 request whose handler makes a server-to-client request is
// told the true reason (the revision has none; return InputRequired), even
// when it declared the capability.
func TestModernHandlerCannotCallTheClient(t *testing.T) {
	tools := askingTools{err: make(chan error, 1)}
	c := startPlain(t, mcptest.ServerOptions(tools))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`)
	c.recv()
	err := <-tools.err
	require.ErrorIs(t, err, mcp.ErrNoClientRequests)
	assert.NotErrorIs(t, err, mcp.ErrCapabilityNotDeclared)
	assert.Contains(t, err.Error(), "InputRequired")
}

// metaTools reports the keys of its call's Meta.
type metaTools struct{}

func (metaTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "meta", InputSchema: []byte(`{"type":"object"}`)}}, nil
}

func (metaTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	keys := make([]string, 0, len(call.Meta))
	for k := range call.Meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return mcp.TextResult(strings.Join(keys, ",")), nil
}

// ToolCall.Meta holds the request's own _meta members, not the protocol
// members of a 2026-07-28 request (the request's scope has those).
func TestToolCallMetaLeavesOutProtocolMembers(t *testing.T) {
	c := startPlain(t, mcptest.ServerOptions(metaTools{}))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"meta","_meta":{"acme/trace":"t1","progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"},"io.modelcontextprotocol/logLevel":"debug"}}}`)
	for {
		m := c.recv()
		if m["id"] != nil {
			res := m["result"].(map[string]any)
			assert.Equal(t, "acme/trace,progressToken", res["content"].([]any)[0].(map[string]any)["text"])
			return
		}
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// nonObjectResults are custom methods' results that are not JSON objects,
// by method name.
var nonObjectResults = map[string]any{"acme/array": []int{1, 2, 3}, "acme/number": 42, "acme/string": "hi", "acme/bool": true,
	"acme/raw": json.RawMessage(`[{"a":1}]`)} // encoded already: the raw path

// startNonObjectMethods starts a server whose custom methods return
// nonObjectResults, and returns its client end and what it logged so far.
func startNonObjectMethods(t *testing.T) (*rawConn, func() string) {
	methods := map[string]mcp.MethodHandler{}
	for name, v := range nonObjectResults {
		methods[name] = func(context.Context, *mcp.Request) (any, error) { return v, nil }
	}
	var logs strings.Builder
	var logMu sync.Mutex
	opts := mcptest.ServerOptions(&modernTools{})
	opts.Methods = methods
	opts.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	return startPlain(t, opts), func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.String()
	}
}

// A custom method whose result is not a JSON object, on a 2026-07-28
// request, whose results are objects carrying resultType: refused with an
// error that names the rule, and logged; nothing is dropped silently.
func TestCustomMethodNonObjectResult2026(t *testing.T) {
	c, logs := startNonObjectMethods(t)
	id := 0
	for name, kind := range map[string]string{"acme/array": "a JSON array", "acme/number": "a JSON number", "acme/string": "a JSON string", "acme/bool": "a JSON boolean", "acme/raw": "a JSON array"} {
		id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, id, name, modernMeta))
		m := c.recv()
		require.Contains(t, m, "error", name)
		e := m["error"].(map[string]any)
		assert.EqualValues(t, mcp.CodeInternalError, e["code"])
		assert.Equal(t, "Internal error: the result is "+kind+", and a result of revision 2026-07-28 must be a JSON object (it carries resultType)", e["message"])
		assert.NotEmpty(t, e["data"].(map[string]any)["correlationId"])
	}
	assert.Equal(t, len(nonObjectResults), strings.Count(logs(), "mcp: result refused"), "each refusal is logged")
}
