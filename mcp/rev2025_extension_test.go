//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

func TestMiddlewareWrapsEveryMethodInOrder(t *testing.T) {
	var mu sync.Mutex
	var log []string
	a, b := &orderRecorder{name: "A"}, &orderRecorder{name: "B"}
	o := modernOptions(&modernTools{})
	o.Middleware = []mcp.Middleware{a.middleware(&log, &mu), b.middleware(&log, &mu)}
	c := startRaw(t, o)
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask",` + modernMeta + `}}`)
	c.recv()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{
		"A>initialize", "B>initialize", "B<initialize", "A<initialize",
		"A>notifications/initialized", "B>notifications/initialized", "B<notifications/initialized", "A<notifications/initialized",
		"A>ping", "B>ping", "B<ping", "A<ping",
		"A>tools/list", "B>tools/list", "B<tools/list", "A<tools/list",
		"A>tools/call", "B>tools/call", "B<tools/call", "A<tools/call",
	}, log)
}

func TestCustomMethodsAndNotifications(t *testing.T) {
	got := make(chan string, 1)
	o := modernOptions(&modernTools{})
	o.Methods = map[string]mcp.MethodHandler{
		"acme/echo": func(ctx context.Context, req *mcp.Request) (any, error) {
			var p struct {
				Say string `json:"say"`
			}
			if err := json.Unmarshal(req.Params, &p); err != nil || p.Say == "" {
				return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: say is required"}
			}
			return map[string]any{"said": p.Say, "revision": req.ProtocolVersion()}, nil
		},
	}
	o.Notifications = map[string]mcp.MethodHandler{
		"acme/poke": func(ctx context.Context, req *mcp.Request) (any, error) {
			got <- string(req.Params)
			return nil, nil
		},
	}
	c := startPlain(t, o)
	// 2026-07-28: no handshake, the answer is stamped.
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/echo","params":{"say":"hi",` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, "hi", res["said"])
	assert.Equal(t, "2026-07-28", res["revision"])
	assert.Equal(t, "complete", res["resultType"])
	// bad params get the handler's error
	c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/echo","params":{` + modernMeta + `}}`)
	assert.Equal(t, float64(mcp.CodeInvalidParams), c.recv()["error"].(map[string]any)["code"])
	// a 2025 session: after the handshake, the plain result.
	// A custom notification before the handshake is not served: the
	// session has not begun (a ping answered after it shows it was read).
	c.send(`{"jsonrpc":"2.0","method":"acme/poke","params":{"n":0}}`)
	c.send(`{"jsonrpc":"2.0","id":30,"method":"ping"}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"acme/poke","params":{"n":0}}`) // initializing: not yet
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","method":"acme/poke","params":{"n":1}}`)
	select {
	case p := <-got:
		assert.JSONEq(t, `{"n":1}`, p)
	case <-time.After(5 * time.Second):
		t.Fatal("custom notification handler not called")
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"acme/echo","params":{"say":"yo"}}`)
	res = c.recv()["result"].(map[string]any)
	assert.Equal(t, map[string]any{"said": "yo", "revision": "2025-06-18"}, res)
	c.send(`{"jsonrpc":"2.0","id":5,"method":"acme/unknown"}`)
	assert.Equal(t, float64(mcp.CodeMethodNotFound), c.recv()["error"].(map[string]any)["code"])
}

func TestDeclaredCapabilities(t *testing.T) {
	o := modernOptions(&modernTools{})
	o.Capabilities = &mcp.ServerCapabilities{
		Experimental: map[string]any{"acme/search": map[string]any{"fuzzy": true}},
		Extensions:   map[string]any{"io.modelcontextprotocol/ui": map[string]any{}},
	}
	c := startRaw(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	caps := c.recv()["result"].(map[string]any)["capabilities"].(map[string]any)
	assert.Contains(t, caps["extensions"], "io.modelcontextprotocol/ui")
	assert.Contains(t, caps["experimental"], "acme/search")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	caps = c.recv()["result"].(map[string]any)["capabilities"].(map[string]any)
	assert.Contains(t, caps["experimental"], "acme/search")
	assert.NotContains(t, caps, "extensions", "2025 revisions have no extensions member")
}

func TestSessionsNotifyAndSendMiddleware(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	o := modernOptions(&modernTools{})
	o.SendMiddleware = []mcp.SendMiddleware{func(next mcp.SendHandler) mcp.SendHandler {
		return func(ctx context.Context, msg *mcp.Outgoing) error {
			mu.Lock()
			sent = append(sent, msg.Method)
			mu.Unlock()
			return next(ctx, msg)
		}
	}}
	srv := mcp.NewServer(o)
	ctx := context.Background()
	legacyEnd, serverEnd := transport.NewPipe(nil)
	go srv.Run(ctx, serverEnd)
	modernEnd, serverEnd2 := transport.NewPipe(nil)
	go srv.Run(ctx, serverEnd2)
	legacy := &rawConn{t: t, tr: legacyEnd}
	modern := &rawConn{t: t, tr: modernEnd}
	t.Cleanup(func() { legacyEnd.Close(); modernEnd.Close() })

	legacy.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	legacy.recv()
	legacy.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	legacy.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`) // answered once the session is RUNNING
	legacy.recv()
	modern.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{},` + modernMeta + `}}`)
	ack := modern.recv()
	require.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
	require.Eventually(t, func() bool { return len(srv.Sessions()) == 2 }, 5*time.Second, 10*time.Millisecond)

	require.NoError(t, srv.NotifyAll(ctx, "acme/news", map[string]any{"headline": "keel ships"}))
	m := legacy.recv()
	assert.Equal(t, "acme/news", m["method"])
	assert.Equal(t, map[string]any{"headline": "keel ships"}, m["params"])
	// The listen stream opted in to nothing: the broadcast is not its.
	modern.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	m = modern.recv()
	assert.Equal(t, "L", m["id"], "the stream ends without the broadcast: %v", m)

	// one session only
	for _, ss := range srv.Sessions() {
		if ss.ProtocolVersion() == "2025-11-25" {
			require.NoError(t, ss.Notify(ctx, "acme/direct", nil))
		}
	}
	assert.Equal(t, "acme/direct", legacy.recv()["method"])
	assert.Error(t, srv.NotifyAll(ctx, "acme/bad", []int{1}), "params must be an object")
	mu.Lock()
	assert.Contains(t, sent, "acme/news")
	assert.Contains(t, sent, "acme/direct")
	assert.Contains(t, sent, "notifications/subscriptions/acknowledged")
	mu.Unlock()
}

// A 2026-07-28 request on a connection whose 2024-11-05 session declared
// no capabilities: what the handler asks the request about the peer (its
// revision, capabilities and client), and the progress message, follow
// the request; the Session stays the connection, of the kind 2024-11-05,
// and the session's own requests keep what initialize declared.
func TestPeerIsAnsweredForTheRequest(t *testing.T) {
	c := startPlain(t, mcptest.ServerOptions(peerTools{}))
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peer","_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"y","version":"2"}}}}`)
	prog := c.recv()
	require.Equal(t, "notifications/progress", prog["method"])
	assert.Equal(t, "half way", prog["params"].(map[string]any)["message"], "2026-07-28 progress carries its message")
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, "2024-11-05 2026-07-28 sampling y", res["content"].([]any)[0].(map[string]any)["text"])
	// the legacy request on the same connection: the session's
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"peer","_meta":{"progressToken":"p2"}}}`)
	prog = c.recv()
	assert.NotContains(t, prog["params"], "message", "2024-11-05 progress has no message")
	res = c.recv()["result"].(map[string]any)
	assert.Equal(t, "2024-11-05 2024-11-05 none x", res["content"].([]any)[0].(map[string]any)["text"])
}

// A middleware that refuses a task-augmented tools/call after its handler
// created the task: the client is told the call was refused, so the task
// must not run.
func TestTaskNotStartedWhenItsCreationIsRefused(t *testing.T) {
	ran := make(chan struct{}, 1)
	tools := taskTools{"side": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		ran <- struct{}{}
		return mcp.TextResult("did it"), nil
	}}
	o := taskServerOptions(tools, nil)
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			if req.Method == "tools/call" {
				return nil, &mcp.Error{Code: mcp.CodeInvalidRequest, Message: "refused by policy"}
			}
			return res, err
		}
	}}
	c, _ := connect(t, o, nil)
	_, err := c.CallToolAsTask(context.Background(), "side", nil, 0)
	require.Error(t, err)
	select {
	case <-ran:
		t.Fatal("the task ran although its creation was refused")
	case <-time.After(200 * time.Millisecond):
	}
}

// Resource-not-found (-32002 in 2025, -32602 in 2026-07-28) and an
// unsupported revision (-32022) carry the request's correlationId beside
// their own data, as every other protocol error does.
func TestEveryProtocolErrorCarriesTheCorrelationID(t *testing.T) {
	opts := modernOptions(&modernTools{})
	opts.Resources = mcptest.NewCatalog()
	c := startRaw(t, opts)
	dataOf := func(want int) map[string]any {
		t.Helper()
		e := c.recv()["error"].(map[string]any)
		assert.EqualValues(t, want, e["code"])
		return e["data"].(map[string]any)
	}

	c.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://users/ghost",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"correlationId":"corr-modern"}}}`)
	data := dataOf(mcp.CodeInvalidParams)
	assert.Equal(t, "test://users/ghost", data["uri"])
	assert.Equal(t, "corr-modern", data["correlationId"])

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{},"correlationId":"corr-version"}}}`)
	data = dataOf(mcp.CodeUnsupportedProtocolVersion)
	assert.Equal(t, "2099-01-01", data["requested"])
	assert.NotEmpty(t, data["supported"])
	assert.Equal(t, "corr-version", data["correlationId"])

	c.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"test://users/ghost","_meta":{"correlationId":"corr-legacy"}}}`)
	data = dataOf(mcp.CodeResourceNotFound)
	assert.Equal(t, "test://users/ghost", data["uri"])
	assert.Equal(t, "corr-legacy", data["correlationId"])
	c.send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://users/ghost"}}`)
	data = dataOf(mcp.CodeResourceNotFound)
	assert.NotEmpty(t, data["correlationId"], "the connection's id when the request names none")
}

// A custom method whose result is not a JSON object: a 2025 session gets
// it intact (the 2026-07-28 refusal: TestCustomMethodNonObjectResult2026).
func TestCustomMethodNonObjectResult(t *testing.T) {
	c, _ := startNonObjectMethods(t)
	c.send(`{"jsonrpc":"2.0","id":100,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 0
	for name, v := range nonObjectResults {
		id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, name))
		m := c.recv()
		want, _ := json.Marshal(v)
		got, _ := json.Marshal(m["result"])
		assert.JSONEq(t, string(want), string(got), "%s: a 2025 session gets the result intact", name)
	}
}
