package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// modernTools is a ToolSource for the 2026-07-28 tests: "hello" returns
// text; "ask" needs an elicitation (and, with {"roots":true}, the client's
// roots) and answers with what it got; "twice" asks in two rounds.
type modernTools struct{ onChange func() }

func (modernTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	schema := jsontext.Value(`{"type":"object"}`)
	return []*mcp.Tool{{Name: "ask", InputSchema: json.RawMessage(schema)}, {Name: "hello", InputSchema: json.RawMessage(schema)}, {Name: "twice", InputSchema: json.RawMessage(schema)}}, nil
}

func (t *modernTools) OnChange(f func()) { t.onChange = f }

var askName = mcp.ElicitInput(mcp.ElicitParams{Message: "What is your name?",
	RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})

func (modernTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	in := mcp.InputFromContext(ctx)
	switch call.Name {
	case "hello":
		mcp.ClientLogger(ctx).Info("saying hello")
		return mcp.TextResult("hello"), nil
	case "ask":
		reqs := map[string]mcp.InputRequest{}
		if !in.Has("name") {
			reqs["name"] = askName
		}
		if strings.Contains(string(call.Arguments), `"roots":true`) && !in.Has("roots") {
			reqs["roots"] = mcp.RootsInput()
		}
		if len(reqs) > 0 {
			return nil, mcp.InputRequired(reqs, []byte("asked"))
		}
		er, ok := in.Elicit("name")
		if !ok {
			return nil, errors.New("no elicitation result")
		}
		return mcp.TextResult("Hello, " + er.Content["name"].(string) + "! state=" + string(in.State)), nil
	case "twice":
		switch {
		case in == nil:
			return nil, mcp.InputRequired(map[string]mcp.InputRequest{"a": askName}, []byte("round-1"))
		case string(in.State) == "round-1":
			return nil, mcp.InputRequired(map[string]mcp.InputRequest{"b": askName}, []byte("round-2"))
		}
		return mcp.TextResult("done after " + string(in.State)), nil
	}
	return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "unknown tool"}
}

// rawConn speaks raw JSON lines to a server over a pipe.
type rawConn struct {
	t  *testing.T
	tr transport.Transport
}

func startRaw(t *testing.T, opts *mcp.ServerOptions) *rawConn {
	t.Helper()
	ct, wait := mcptest.StartServer(t, opts, nil)
	t.Cleanup(func() { ct.Close(); _ = wait() })
	// every message the server emits is checked against the schema of the
	// revision its request named (or the session negotiated)
	return &rawConn{t: t, tr: mcptest.ValidateTransport(t, ct)}
}

func (c *rawConn) send(line string) {
	c.t.Helper()
	require.NoError(c.t, c.tr.Write(context.Background(), []byte(line)))
}

// recv reads the next message as a generic JSON value.
func (c *rawConn) recv() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := c.tr.Read(ctx)
	require.NoError(c.t, err)
	var m map[string]any
	require.NoError(c.t, json.Unmarshal(b, &m), string(b))
	return m
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}}}`

func modernOptions(tools *modernTools) *mcp.ServerOptions {
	o := mcptest.ServerOptions(tools)
	o.Logging = true
	o.StateKey = []byte("0123456789abcdef0123456789abcdef")
	return o
}

func TestModernErrorsAndRemovedMethods(t *testing.T) {
	c := startRaw(t, modernOptions(&modernTools{}))
	tests := []struct {
		name, line string
		code       float64
		msg        string
	}{
		{"no _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, -32602, "clientCapabilities"},
		{"unsupported version", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, -32022, "2099-01-01"},
		{"bad logLevel", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}}`, -32602, "loud"},
		{"initialize removed", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{` + modernMeta + `}}`, -32601, "initialize"},
		{"ping removed", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{` + modernMeta + `}}`, -32601, "ping"},
		{"setLevel removed", `{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"debug",` + modernMeta + `}}`, -32601, "setLevel"},
		{"subscribe removed", `{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"test://x",` + modernMeta + `}}`, -32601, "subscribe"},
		{"tasks/list removed", `{"jsonrpc":"2.0","id":8,"method":"tasks/list","params":{` + modernMeta + `}}`, -32601, "tasks/list"},
		{"not offered", `{"jsonrpc":"2.0","id":9,"method":"prompts/list","params":{` + modernMeta + `}}`, -32601, "prompts/list"},
		{"tampered state", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"ask","requestState":"eyJ4IjoxfQ.AAAA",` + modernMeta + `}}`, -32602, "integrity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.send(tt.line)
			m := c.recv()
			e, ok := m["error"].(map[string]any)
			require.True(t, ok, "want an error, got %v", m)
			assert.Equal(t, tt.code, e["code"])
			assert.Contains(t, e["message"], tt.msg)
			var req map[string]any
			require.NoError(t, json.Unmarshal([]byte(tt.line), &req))
			assert.Equal(t, req["id"], m["id"], "the error echoes the id")
		})
	}
	c.send(`{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	data := c.recv()["error"].(map[string]any)["data"].(map[string]any)
	assert.Equal(t, "2099-01-01", data["requested"])
	assert.Equal(t, servedVersions, data["supported"])
}

func TestModernDiscoverAndResults(t *testing.T) {
	c := startRaw(t, modernOptions(&modernTools{}))
	c.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, "complete", res["resultType"])
	assert.Equal(t, servedVersions, res["supportedVersions"])
	assert.Equal(t, float64(0), res["ttlMs"])
	assert.Equal(t, "private", res["cacheScope"])
	caps := res["capabilities"].(map[string]any)
	assert.Contains(t, caps, "tools")
	assert.Contains(t, caps, "logging")
	assert.NotContains(t, caps, "prompts", "only what the server serves")
	info := res["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any)
	assert.Equal(t, "keel-test", info["name"])

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
	res = c.recv()["result"].(map[string]any)
	assert.Equal(t, "complete", res["resultType"])
	assert.Contains(t, res, "ttlMs")
	assert.Len(t, res["tools"], 3)

	// No logLevel: no notifications/message, only the result.
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hello",` + modernMeta + `}}`)
	m := c.recv()
	assert.Equal(t, float64(3), m["id"], "no log message before the result: %v", m)
	res = m["result"].(map[string]any)
	assert.Equal(t, "complete", res["resultType"])
	assert.NotContains(t, res, "ttlMs", "tools/call results are not cacheable")

	// With logLevel info: the log message comes first, on this request.
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hello","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}}}`)
	m = c.recv()
	assert.Equal(t, "notifications/message", m["method"])
	assert.Equal(t, float64(4), c.recv()["id"])
}

func TestModernInputRequiredRounds(t *testing.T) {
	c := startRaw(t, modernOptions(&modernTools{}))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{"roots":true},` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, "input_required", res["resultType"])
	reqs := res["inputRequests"].(map[string]any)
	assert.Equal(t, "elicitation/create", reqs["name"].(map[string]any)["method"])
	assert.Equal(t, "roots/list", reqs["roots"].(map[string]any)["method"])
	state := res["requestState"].(string)
	require.NotEmpty(t, state)
	assert.NotContains(t, res, "ttlMs")

	answers := `"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}},"roots":{"roots":[]},"extra":{"ignored":true}}`
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{"roots":true},` + answers + `,"requestState":"` + state + `",` + modernMeta + `}}`)
	res = c.recv()["result"].(map[string]any)
	assert.Equal(t, "complete", res["resultType"])
	assert.Equal(t, "Hello, Ada! state=asked", res["content"].([]any)[0].(map[string]any)["text"])

	// The state is bound to the request: other arguments, another tool, a changed byte.
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask","arguments":{"roots":false},"requestState":"` + state + `",` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"twice","arguments":{"roots":true},"requestState":"` + state + `",` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"roots":true},"requestState":"x` + state[1:] + `",` + modernMeta + `}}`,
	} {
		c.send(line)
		e, ok := c.recv()["error"].(map[string]any)
		require.True(t, ok, "case %d", i)
		assert.Equal(t, float64(-32602), e["code"], "case %d", i)
	}

	// A malformed answer to a known key is refused.
	c.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{"roots":true},"inputResponses":{"name":{"roots":[]}},"requestState":"` + state + `",` + modernMeta + `}}`)
	assert.Equal(t, float64(-32602), c.recv()["error"].(map[string]any)["code"])

	// Two rounds, each with its own state.
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"twice",` + modernMeta + `}}`)
	s1 := c.recv()["result"].(map[string]any)["requestState"].(string)
	c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"twice","inputResponses":{"a":{"action":"decline"}},"requestState":"` + s1 + `",` + modernMeta + `}}`)
	r2 := c.recv()["result"].(map[string]any)
	assert.Contains(t, r2["inputRequests"], "b")
	s2 := r2["requestState"].(string)
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"twice","inputResponses":{"b":{"action":"decline"}},"requestState":"` + s2 + `",` + modernMeta + `}}`)
	assert.Equal(t, "done after round-2", c.recv()["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])

	// The request did not declare roots: -32021 names what is missing.
	c.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"ask","arguments":{"roots":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`)
	e := c.recv()["error"].(map[string]any)
	assert.Equal(t, float64(-32021), e["code"])
	assert.Equal(t, map[string]any{"roots": map[string]any{}}, e["data"].(map[string]any)["requiredCapabilities"])
}

func TestModernListen(t *testing.T) {
	tools := &modernTools{}
	c := startRaw(t, modernOptions(tools))
	c.send(`{"jsonrpc":"2.0","id":"sub","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},` + modernMeta + `}}`)
	ack := c.recv()
	assert.Equal(t, "notifications/subscriptions/acknowledged", ack["method"])
	p := ack["params"].(map[string]any)
	assert.Equal(t, map[string]any{"toolsListChanged": true}, p["notifications"], "prompts are not served: not honoured")
	assert.Equal(t, "sub", p["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])

	tools.onChange()
	n := c.recv()
	assert.Equal(t, "notifications/tools/list_changed", n["method"])
	assert.Equal(t, "sub", n["params"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])

	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sub"}}`)
	end := c.recv()
	assert.Equal(t, "sub", end["id"])
	res := end["result"].(map[string]any)
	assert.Equal(t, "complete", res["resultType"])
	assert.Equal(t, "sub", res["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"])
	assert.Equal(t, "notifications/cancelled", c.recv()["method"])
}

func TestInputAccessors(t *testing.T) {
	var none *mcp.Input
	assert.False(t, none.Has("x"))
	_, ok := none.Elicit("x")
	assert.False(t, ok)
	in := &mcp.Input{Responses: map[string]json.RawMessage{
		"e": json.RawMessage(`{"action":"accept","content":{"a":1}}`),
		"s": json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m"}`),
		"r": json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`),
	}}
	er, ok := in.Elicit("e")
	require.True(t, ok)
	assert.Equal(t, "accept", er.Action)
	sr, ok := in.Sample("s")
	require.True(t, ok)
	assert.Equal(t, "Paris", sr.Content[0].Text)
	rr, ok := in.Roots("r")
	require.True(t, ok)
	assert.Equal(t, "file:///a", rr.Roots[0].URI)
	_, ok = in.Roots("e")
	assert.False(t, ok, "an elicitation result is not a roots result")
	_, ok = in.Sample("r")
	assert.False(t, ok)
	b, err := jsonv2.Marshal(mcp.InputRequired(map[string]mcp.InputRequest{"r": mcp.RootsInput()}, nil).Requests)
	require.NoError(t, err)
	assert.JSONEq(t, `{"r":{"method":"roots/list","params":{}}}`, string(b))
}

// The modern Client drives the modern server end to end over the in-memory
// transport: discover, an input-required round answered by the Client's
// handlers, the removed ping, and a subscription.
func TestModernClientAgainstServer(t *testing.T) {
	tools := &modernTools{}
	copts := *quietClient
	copts.ProtocolVersion = mcp.Version20260728
	copts.OnElicitation = func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Lin"}}, nil
	}
	copts.Roots = []mcp.Root{{URI: "file:///tmp"}}
	changed := make(chan string, 4)
	copts.OnListChanged = func(method string) { changed <- method }
	c, _ := connect(t, modernOptions(tools), &copts)
	ctx := context.Background()

	assert.Equal(t, mcp.Version20260728, c.ProtocolVersion())
	require.NotNil(t, c.DiscoverResult())
	assert.Equal(t, "keel-test", c.InitializeResult().ServerInfo.Name)

	res, err := c.CallTool(ctx, "ask", map[string]any{"roots": true})
	require.NoError(t, err)
	assert.Equal(t, "Hello, Lin! state=asked", res.Content[0].Text)
	res, err = c.CallTool(ctx, "twice", nil)
	require.NoError(t, err)
	assert.Equal(t, "done after round-2", res.Content[0].Text)

	require.ErrorIs(t, c.Ping(ctx), mcp.ErrMethodRemoved)

	sub, err := c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true})
	require.NoError(t, err)
	assert.True(t, sub.Honoured().ToolsListChanged)
	tools.onChange()
	assert.Equal(t, "notifications/tools/list_changed", recv(t, changed, "the tagged list_changed"))
	require.NoError(t, sub.Close())
}

// prompts/get and resources/read answer input_required too, with a state
// bound to the prompt's arguments and to the resource's URI.
func TestModernInputRequiredPromptAndResource(t *testing.T) {
	reg := registry.New(nil)
	registry.MustRegisterPrompt(reg, "greeting", "Greets whoever answers",
		func(ctx context.Context, args struct {
			Style string `json:"style"`
		}) (*mcp.GetPromptResult, error) {
			er, ok := mcp.InputFromContext(ctx).Elicit("who")
			if !ok {
				return nil, mcp.InputRequired(map[string]mcp.InputRequest{"who": askName}, nil)
			}
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser,
				Content: mcp.Content{Type: mcp.ContentText, Text: args.Style + " " + er.Content["name"].(string)}}}}, nil
		}, nil)
	require.NoError(t, reg.AddResource(&mcp.Resource{URI: "test://secret", Name: "secret"},
		func(ctx context.Context, uri string) ([]mcp.ResourceContents, error) {
			if _, ok := mcp.InputFromContext(ctx).Roots("roots"); !ok {
				return nil, mcp.InputRequired(map[string]mcp.InputRequest{"roots": mcp.RootsInput()}, []byte("r"))
			}
			text := "42"
			return []mcp.ResourceContents{{URI: uri, Text: &text}}, nil
		}))
	o := modernOptions(&modernTools{})
	o.Prompts, o.Resources = reg, reg
	c := startRaw(t, o)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greeting","arguments":{"style":"Hi"},` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	require.Equal(t, "input_required", res["resultType"])
	state := res["requestState"].(string)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greeting","arguments":{"style":"Yo"},"inputResponses":{"who":{"action":"accept","content":{"name":"Bo"}}},"requestState":"` + state + `",` + modernMeta + `}}`)
	assert.Equal(t, float64(-32602), c.recv()["error"].(map[string]any)["code"], "the state is bound to the arguments")
	c.send(`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"greeting","arguments":{"style":"Hi"},"inputResponses":{"who":{"action":"accept","content":{"name":"Bo"}}},"requestState":"` + state + `",` + modernMeta + `}}`)
	res = c.recv()["result"].(map[string]any)
	assert.Equal(t, "complete", res["resultType"])
	assert.Equal(t, "Hi Bo", res["messages"].([]any)[0].(map[string]any)["content"].(map[string]any)["text"])

	c.send(`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"test://secret",` + modernMeta + `}}`)
	res = c.recv()["result"].(map[string]any)
	require.Equal(t, "input_required", res["resultType"])
	assert.NotContains(t, res, "ttlMs", "no caching hints on an input-required result")
	state = res["requestState"].(string)
	c.send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"test://secret","inputResponses":{"roots":{"roots":[]}},"requestState":"` + state + `",` + modernMeta + `}}`)
	res = c.recv()["result"].(map[string]any)
	assert.Equal(t, "complete", res["resultType"])
	assert.Contains(t, res, "ttlMs")
	assert.Equal(t, "42", res["contents"].([]any)[0].(map[string]any)["text"])
}

// Broadcasts honour each listen stream's filter, and one stream's client
// can be notified alone (Server.ListenStreams, ListenStream.Notify).
func TestListenStreamsFilterAndNotifyAlone(t *testing.T) {
	opts := modernOptions(&modernTools{})
	opts.Resources = mcptest.NewCatalog()
	srv := mcp.NewServer(opts)
	open := func(id, filter string) *rawConn {
		ct, st := transport.NewPipe(nil)
		go srv.Run(context.Background(), st)
		t.Cleanup(func() { ct.Close() })
		c := &rawConn{t: t, tr: mcptest.ValidateTransport(t, ct)}
		c.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"notifications":` + filter + `,` + modernMeta + `}}`)
		require.Equal(t, "notifications/subscriptions/acknowledged", c.recv()["method"])
		return c
	}
	tools := open("tools", `{"toolsListChanged":true}`)
	res := open("res", `{"resourceSubscriptions":["test://users/"]}`)
	none := open("none", `{}`)
	require.Eventually(t, func() bool { return len(srv.ListenStreams()) == 3 }, 5*time.Second, time.Millisecond)

	ctx := context.Background()
	require.NoError(t, srv.NotifyAll(ctx, "acme/news", map[string]any{"headline": "x"}), "no stream opted in to it")
	require.NoError(t, srv.NotifyAll(ctx, "notifications/resources/updated", map[string]any{"uri": "test://other/1"}), "no stream covers the uri")
	require.NoError(t, srv.NotifyAll(ctx, "notifications/tools/list_changed", nil))
	require.NoError(t, srv.NotifyAll(ctx, "notifications/resources/updated", map[string]any{"uri": "test://users/ada"}))
	// Each stream's notes are queued in order: a broadcast it must not get
	// would come before the one it gets.
	m := tools.recv()
	assert.Equal(t, "notifications/tools/list_changed", m["method"])
	assert.Equal(t, "tools", m["params"].(map[string]any)["_meta"].(map[string]any)[revision.MetaSubscriptionID])
	m = res.recv()
	assert.Equal(t, "notifications/resources/updated", m["method"])
	assert.Equal(t, "test://users/ada", m["params"].(map[string]any)["uri"])

	// One stream alone.
	var target, other *mcp.ListenStream
	for _, ls := range srv.ListenStreams() {
		switch string(ls.ID()) {
		case `"res"`:
			target = ls
		case `"none"`:
			other = ls
		}
	}
	require.NotNil(t, target)
	require.NotNil(t, other)
	assert.Equal(t, []string{"test://users/"}, target.Filter().ResourceSubscriptions)
	assert.NotEmpty(t, target.Peer().Key)
	require.NoError(t, target.Notify("notifications/resources/updated", map[string]any{"uri": "test://users/bob"}))
	m = res.recv()
	assert.Equal(t, "test://users/bob", m["params"].(map[string]any)["uri"])
	assert.Equal(t, "res", m["params"].(map[string]any)["_meta"].(map[string]any)[revision.MetaSubscriptionID])
	assert.ErrorIs(t, target.Notify("notifications/tools/list_changed", nil), mcp.ErrNotSubscribed)
	assert.ErrorIs(t, other.Notify("acme/news", nil), mcp.ErrNotSubscribed)
	assert.Error(t, target.Notify("notifications/resources/updated", []int{1}), "params must be an object")

	// The streams that were not notified got nothing: their next message
	// is the end of their subscription.
	for id, c := range map[string]*rawConn{"tools": tools, "none": none} {
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `"}}`)
		assert.Equal(t, id, c.recv()["id"], "%s got nothing more", id)
	}
	require.Eventually(t, func() bool { return len(srv.ListenStreams()) == 1 }, 5*time.Second, time.Millisecond)
	for _, ls := range srv.ListenStreams() {
		res.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"res"}}`)
		assert.Equal(t, "res", res.recv()["id"])
		require.Eventually(t, func() bool { return len(srv.ListenStreams()) == 0 }, 5*time.Second, time.Millisecond)
		assert.ErrorIs(t, ls.Notify("notifications/resources/updated", map[string]any{"uri": "test://users/x"}), mcp.ErrClosed, "an ended stream")
	}
}
