package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// scripted is a fake modern server for Client tests: the test reads the
// client's messages from the server end of a pipe and answers them.
type scripted struct {
	t  *testing.T
	tr transport.Transport
}

// wireMsg is one message the client sent.
type wireMsg struct {
	ID     jsontext.Value `json:"id"`
	Method string         `json:"method"`
	Params jsontext.Value `json:"params"`
}

// meta returns the params' _meta.
func (m *wireMsg) meta(t *testing.T) map[string]jsontext.Value {
	t.Helper()
	var p struct {
		Meta map[string]jsontext.Value `json:"_meta"`
	}
	require.NoError(t, jsonv2.Unmarshal(m.Params, &p), "params of %s: %s", m.Method, m.Params)
	return p.Meta
}

// param returns the params member name ("" when absent).
func (m *wireMsg) param(t *testing.T, name string) string {
	t.Helper()
	var p map[string]jsontext.Value
	require.NoError(t, jsonv2.Unmarshal(m.Params, &p))
	return string(p[name])
}

func (s *scripted) read() *wireMsg {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := s.tr.Read(ctx)
	require.NoError(s.t, err)
	var m wireMsg
	require.NoError(s.t, jsonv2.Unmarshal(b, &m, jsonv2.RejectUnknownMembers(false)), "%s", b)
	return &m
}

// expect reads the next message and checks its method.
func (s *scripted) expect(method string) *wireMsg {
	s.t.Helper()
	m := s.read()
	require.Equal(s.t, method, m.Method, "params: %s", m.Params)
	return m
}

func (s *scripted) write(format string, args ...any) {
	s.t.Helper()
	require.NoError(s.t, s.tr.Write(context.Background(), fmt.Appendf(nil, format, args...)))
}

func (s *scripted) reply(id jsontext.Value, result string) {
	s.t.Helper()
	s.write(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

func (s *scripted) notify(method, params string) {
	s.t.Helper()
	s.write(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, params)
}

// async runs f on its own goroutine; wait returns its results.
func async[T any](f func() (T, error)) (wait func(t *testing.T) (T, error)) {
	type out struct {
		v   T
		err error
	}
	ch := make(chan out, 1)
	go func() { v, err := f(); ch <- out{v, err} }()
	return func(t *testing.T) (T, error) {
		t.Helper()
		select {
		case o := <-ch:
			return o.v, o.err
		case <-time.After(5 * time.Second):
			t.Fatal("the call did not return")
			var zero T
			return zero, nil
		}
	}
}

const discoverResult = `{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],` +
	`"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"instructions":"be kind",` +
	`"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"1.2.3"}}}`

// modernClient connects a modern Client (opts may be nil) to a scripted
// server, answering server/discover with discoverResult.
func modernClient(t *testing.T, opts *mcp.ClientOptions) (*mcp.Client, *scripted) {
	t.Helper()
	var o mcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	o.ProtocolVersion = mcp.Version20260728
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ct, st := transport.NewPipe(nil)
	s := &scripted{t: t, tr: st}
	c := mcp.NewClient(&o)
	wait := async(func() (struct{}, error) { return struct{}{}, c.Connect(context.Background(), ct) })
	m := s.expect("server/discover")
	s.reply(m.ID, discoverResult)
	_, err := wait(t)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, s
}

func TestModernClientDiscover(t *testing.T) {
	ct, st := transport.NewPipe(nil)
	s := &scripted{t: t, tr: st}
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Name: "tester", Version: "9.9", Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { c.Close() })
	wait := async(func() (struct{}, error) { return struct{}{}, c.Connect(context.Background(), ct) })

	m := s.expect("server/discover")
	assert.JSONEq(t, `{"_meta":{
		"io.modelcontextprotocol/protocolVersion":"2026-07-28",
		"io.modelcontextprotocol/clientCapabilities":{},
		"io.modelcontextprotocol/clientInfo":{"name":"tester","version":"9.9"}}}`, string(m.Params))
	s.reply(m.ID, discoverResult)
	_, err := wait(t)
	require.NoError(t, err)

	d := c.DiscoverResult()
	require.NotNil(t, d)
	assert.Equal(t, []string{mcp.Version20260728, mcp.Version20251125}, d.SupportedVersions)
	assert.True(t, d.Capabilities.Resources.Subscribe)
	init := c.InitializeResult()
	require.NotNil(t, init)
	assert.Equal(t, mcp.Implementation{Name: "fake", Version: "1.2.3"}, init.ServerInfo)
	assert.Equal(t, "be kind", init.Instructions)
	assert.True(t, init.Capabilities.Tools.ListChanged)
	assert.Equal(t, mcp.Version20260728, c.ProtocolVersion())

	// No notifications/initialized: the next message is the next request.
	list := async(func() (*mcp.ListToolsResult, error) { return c.ListTools(context.Background(), "") })
	m = s.expect("tools/list")
	s.reply(m.ID, `{"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object"}}],"ttlMs":5,"cacheScope":"private"}`)
	res, err := list(t)
	require.NoError(t, err)
	require.Len(t, res.Tools, 1)
	assert.Equal(t, "t", res.Tools[0].Name)
}

func TestModernClientDiscoverFails(t *testing.T) {
	tests := []struct {
		name   string
		answer string // the response member after the id
		check  func(t *testing.T, err error)
	}{
		{
			name:   "unsupported version error",
			answer: `"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}`,
			check: func(t *testing.T, err error) {
				var e *mcp.Error
				require.ErrorAs(t, err, &e)
				assert.EqualValues(t, mcp.CodeUnsupportedProtocolVersion, e.Code)
			},
		},
		{
			name:   "version not listed",
			answer: `"result":{"resultType":"complete","supportedVersions":["2025-11-25"],"capabilities":{}}`,
			check: func(t *testing.T, err error) {
				assert.ErrorContains(t, err, "does not support protocol revision 2026-07-28 (it supports: 2025-11-25)")
			},
		},
		{
			name:   "unknown resultType",
			answer: `"result":{"resultType":"later","supportedVersions":["2026-07-28"],"capabilities":{}}`,
			check: func(t *testing.T, err error) {
				assert.ErrorContains(t, err, `unknown resultType "later"`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, st := transport.NewPipe(nil)
			s := &scripted{t: t, tr: st}
			c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Logger: slog.New(slog.DiscardHandler)})
			wait := async(func() (struct{}, error) { return struct{}{}, c.Connect(context.Background(), ct) })
			m := s.expect("server/discover")
			s.write(`{"jsonrpc":"2.0","id":%s,%s}`, m.ID, tt.answer)
			_, err := wait(t)
			require.Error(t, err)
			tt.check(t, err)
			assert.Nil(t, c.DiscoverResult())
			assert.Nil(t, c.InitializeResult())
		})
	}
}

func TestModernClientRequestMeta(t *testing.T) {
	c, s := modernClient(t, &mcp.ClientOptions{
		Name: "meta", Version: "1", LogLevel: mcp.LoggingLevel("info"),
		OnElicitation: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) { return nil, nil },
		Roots:         []mcp.Root{},
	})
	ctx := context.Background()

	// The client's keys, with the caller's _meta merged in (the caller's
	// logLevel wins).
	call := async(func() (*mcp.CallToolResult, error) {
		return c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"x":1}`),
			Meta: mcp.Meta{mcp.MetaProgressToken: 7, "custom": "yes", revision.MetaLogLevel: "debug"}})
	})
	m := s.expect("tools/call")
	assert.JSONEq(t, `{"name":"echo","arguments":{"x":1},"_meta":{
		"progressToken":7,"custom":"yes",
		"io.modelcontextprotocol/logLevel":"debug",
		"io.modelcontextprotocol/protocolVersion":"2026-07-28",
		"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"roots":{}},
		"io.modelcontextprotocol/clientInfo":{"name":"meta","version":"1"}}}`, string(m.Params))
	s.reply(m.ID, `{"resultType":"complete","content":[{"type":"text","text":"hi"}]}`)
	res, err := call(t)
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content[0].Text)

	// Every request, params or not, carries them; resultType is stripped.
	raw := async(func() (jsontext.Value, error) {
		var v jsontext.Value
		err := c.Call(ctx, "prompts/list", nil, &v)
		return v, err
	})
	m = s.expect("prompts/list")
	meta := m.meta(t)
	assert.JSONEq(t, `"info"`, string(meta[revision.MetaLogLevel]))
	assert.JSONEq(t, `"2026-07-28"`, string(meta[revision.MetaProtocolVersion]))
	s.reply(m.ID, `{"prompts":[],"resultType":"complete","ttlMs":0,"cacheScope":"public"}`)
	v, err := raw(t)
	require.NoError(t, err)
	assert.JSONEq(t, `{"prompts":[],"ttlMs":0,"cacheScope":"public"}`, string(v))

	// A result without resultType (an older server) counts as complete.
	read := async(func() (*mcp.ReadResourceResult, error) { return c.ReadResource(ctx, "file:///a") })
	m = s.expect("resources/read")
	assert.JSONEq(t, `"file:///a"`, m.param(t, "uri"))
	s.reply(m.ID, `{"contents":[{"uri":"file:///a","text":"A"}]}`)
	rr, err := read(t)
	require.NoError(t, err)
	require.NotNil(t, rr.Contents[0].Text)
	assert.Equal(t, "A", *rr.Contents[0].Text)
}

func TestModernClientRemovedMethods(t *testing.T) {
	c, s := modernClient(t, nil)
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
	}{
		{"ping", func() error { return c.Ping(ctx) }},
		{"setLevel", func() error { return c.SetLoggingLevel(ctx, "debug") }},
		{"subscribe", func() error { return c.Subscribe(ctx, "file:///a") }},
		{"unsubscribe", func() error { return c.Unsubscribe(ctx, "file:///a") }},
		{"tools/call as a 2025-11-25 task", func() error { _, err := c.CallToolAsTask(ctx, "t", nil, 0); return err }},
		{"tasks/result", func() error { _, err := c.TaskResult(ctx, "t1"); return err }},
		{"tasks/list", func() error { _, err := c.ListTasks(ctx, ""); return err }},
		{"tasks/list, all pages", func() error { _, err := c.ListAllTasks(ctx); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), mcp.ErrMethodRemoved)
		})
	}
	_, err := c.GetTask(ctx, "t1")
	assert.ErrorContains(t, err, "PollTask", "the 2025-11-25 tasks/get points to PollTask")
	// Nothing was sent: the next message is the next request.
	list := async(func() (*mcp.ListToolsResult, error) { return c.ListTools(ctx, "") })
	m := s.expect("tools/list")
	s.reply(m.ID, `{"resultType":"complete","tools":[]}`)
	_, err = list(t)
	require.NoError(t, err)
}

func TestModernClientInputRequired(t *testing.T) {
	var elicited *mcp.ElicitParams
	c, s := modernClient(t, &mcp.ClientOptions{
		OnElicitation: func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			elicited = p
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"ok": true}}, nil
		},
		Roots: []mcp.Root{{URI: "file:///work", Name: "work"}},
	})
	call := async(func() (*mcp.CallToolResult, error) {
		return c.CallTool(context.Background(), "deploy", map[string]any{"env": "prod"})
	})

	first := s.expect("tools/call")
	assert.Empty(t, first.param(t, "inputResponses"))
	s.reply(first.ID, `{"resultType":"input_required","requestState":"sealed/state+1==",
		"inputRequests":{
			"confirm":{"method":"elicitation/create","params":{"message":"Deploy?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}},
			"where":{"method":"roots/list","params":{}}}}`)

	second := s.expect("tools/call")
	assert.NotEqual(t, string(first.ID), string(second.ID), "a retry has a new id")
	assert.JSONEq(t, `"deploy"`, second.param(t, "name"))
	assert.JSONEq(t, `{"env":"prod"}`, second.param(t, "arguments"))
	assert.Equal(t, `"sealed/state+1=="`, second.param(t, "requestState"))
	assert.JSONEq(t, `{"confirm":{"action":"accept","content":{"ok":true}},
		"where":{"roots":[{"uri":"file:///work","name":"work"}]}}`, second.param(t, "inputResponses"))
	assert.Equal(t, first.meta(t), second.meta(t))
	require.NotNil(t, elicited)
	assert.Equal(t, "Deploy?", elicited.Message)

	// A second round with state only: no inputResponses this time.
	s.reply(second.ID, `{"resultType":"input_required","requestState":"round-2"}`)
	third := s.expect("tools/call")
	assert.Equal(t, `"round-2"`, third.param(t, "requestState"))
	assert.Empty(t, third.param(t, "inputResponses"))
	s.reply(third.ID, `{"resultType":"complete","content":[{"type":"text","text":"deployed"}]}`)

	res, err := call(t)
	require.NoError(t, err)
	assert.Equal(t, "deployed", res.Content[0].Text)
}

func TestModernClientInputRequiredPromptSampling(t *testing.T) {
	c, s := modernClient(t, &mcp.ClientOptions{
		OnSampling: func(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m",
				Content: mcp.SamplingMessageContent{{Type: mcp.ContentText, Text: "sampled"}}}, nil
		},
	})
	get := async(func() (*mcp.GetPromptResult, error) { return c.GetPrompt(context.Background(), "p", nil) })
	m := s.expect("prompts/get")
	assert.JSONEq(t, `{"sampling":{}}`, string(m.meta(t)[revision.MetaClientCapabilities]))
	s.reply(m.ID, `{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage",
		"params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}}}}`)
	m = s.expect("prompts/get")
	assert.Empty(t, m.param(t, "requestState"))
	var resp map[string]mcp.CreateMessageResult
	require.NoError(t, jsonv2.Unmarshal([]byte(m.param(t, "inputResponses")), &resp))
	assert.Equal(t, "sampled", resp["s"].Content[0].Text)
	s.reply(m.ID, `{"resultType":"complete","messages":[]}`)
	_, err := get(t)
	require.NoError(t, err)
}

func TestModernClientInputRequiredFailures(t *testing.T) {
	tests := []struct {
		name   string
		method string // the request the test makes
		answer string
		want   string
	}{
		{"no handler", "tools/call",
			`{"resultType":"input_required","inputRequests":{"s":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}}}`,
			`input request "s" (sampling/createMessage): the client has no handler for sampling/createMessage`},
		{"unknown input method", "tools/call",
			`{"resultType":"input_required","inputRequests":{"x":{"method":"tools/list","params":{}}}}`,
			`the client cannot answer method "tools/list"`},
		{"neither requests nor state", "resources/read",
			`{"resultType":"input_required"}`, "neither inputRequests nor requestState"},
		{"not an input method", "tools/list",
			`{"resultType":"input_required","requestState":"s"}`, "only tools/call, prompts/get and resources/read"},
		{"unknown resultType", "tools/call", `{"resultType":"eventually"}`, `unknown resultType "eventually"`},
		{"task without the extension", "tools/call", `{"resultType":"task","taskId":"t"}`, "did not declare the io.modelcontextprotocol/tasks extension"},
	}
	c, s := modernClient(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call := async(func() (struct{}, error) {
				return struct{}{}, c.Call(context.Background(), tt.method, map[string]any{"name": "x", "uri": "x"}, nil)
			})
			m := s.expect(tt.method)
			s.reply(m.ID, tt.answer)
			_, err := call(t)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestModernClientInputRoundsBound(t *testing.T) {
	c, s := modernClient(t, &mcp.ClientOptions{MaxInputRounds: 2})
	call := async(func() (*mcp.CallToolResult, error) { return c.CallTool(context.Background(), "loop", nil) })
	ids := map[string]bool{}
	for i := range 3 { // the request, then two retries
		m := s.expect("tools/call")
		ids[string(m.ID)] = true
		s.reply(m.ID, fmt.Sprintf(`{"resultType":"input_required","requestState":"s%d"}`, i))
	}
	_, err := call(t)
	assert.ErrorContains(t, err, "tools/call: the server still asks for input after 2 rounds")
	assert.Len(t, ids, 3)
}

func TestModernClientListen(t *testing.T) {
	var mu sync.Mutex
	var changed []string
	got := make(chan struct{}, 1)
	c, s := modernClient(t, &mcp.ClientOptions{OnListChanged: func(method string) {
		mu.Lock()
		changed = append(changed, method)
		mu.Unlock()
		got <- struct{}{}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := async(func() (*mcp.Subscription, error) {
		return c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true})
	})
	m := s.expect("subscriptions/listen")
	assert.JSONEq(t, `{"toolsListChanged":true,"promptsListChanged":true}`, m.param(t, "notifications"))
	assert.JSONEq(t, `"2026-07-28"`, string(m.meta(t)[revision.MetaProtocolVersion]))
	// An acknowledgement of another subscription is not ours.
	s.notify("notifications/subscriptions/acknowledged", `{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":999}}`)
	s.notify("notifications/subscriptions/acknowledged", fmt.Sprintf(`{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":%s}}`, m.ID))
	sub, err := listen(t)
	require.NoError(t, err)
	assert.Equal(t, mcp.SubscriptionFilter{ToolsListChanged: true}, sub.Honoured())
	assert.Equal(t, string(m.ID), string(sub.ID()))

	s.notify("notifications/tools/list_changed", fmt.Sprintf(`{"_meta":{"io.modelcontextprotocol/subscriptionId":%s}}`, m.ID))
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("list_changed not delivered")
	}
	mu.Lock()
	assert.Equal(t, []string{"notifications/tools/list_changed"}, changed)
	mu.Unlock()

	cancel()
	n := s.expect("notifications/cancelled")
	assert.Equal(t, string(m.ID), n.param(t, "requestId"))
	select {
	case <-sub.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("subscription not done")
	}
	assert.NoError(t, sub.Err())
	s.reply(m.ID, fmt.Sprintf(`{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":%s}}`, m.ID))
	assert.NoError(t, sub.Close())
}

func TestModernClientListenEnds(t *testing.T) {
	c, s := modernClient(t, nil)
	ctx := context.Background()

	t.Run("closed by the client", func(t *testing.T) {
		listen := async(func() (*mcp.Subscription, error) {
			return c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{"file:///a"}})
		})
		m := s.expect("subscriptions/listen")
		assert.JSONEq(t, `{"resourceSubscriptions":["file:///a"]}`, m.param(t, "notifications"))
		s.notify("notifications/subscriptions/acknowledged", fmt.Sprintf(`{"notifications":{"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":%s}}`, m.ID))
		sub, err := listen(t)
		require.NoError(t, err)
		require.NoError(t, sub.Close())
		n := s.expect("notifications/cancelled")
		assert.Equal(t, string(m.ID), n.param(t, "requestId"))
	})
	t.Run("ended by the server", func(t *testing.T) {
		listen := async(func() (*mcp.Subscription, error) {
			return c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true})
		})
		m := s.expect("subscriptions/listen")
		s.notify("notifications/subscriptions/acknowledged", fmt.Sprintf(`{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":%s}}`, m.ID))
		sub, err := listen(t)
		require.NoError(t, err)
		s.reply(m.ID, `{"resultType":"complete","_meta":{}}`)
		select {
		case <-sub.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("subscription not done")
		}
		assert.NoError(t, sub.Err())
	})
	t.Run("refused", func(t *testing.T) {
		listen := async(func() (*mcp.Subscription, error) { return c.Listen(ctx, mcp.SubscriptionFilter{}) })
		m := s.expect("subscriptions/listen")
		s.write(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"bad filter"}}`, m.ID)
		_, err := listen(t)
		var e *mcp.Error
		require.ErrorAs(t, err, &e)
		assert.EqualValues(t, mcp.CodeInvalidParams, e.Code)
	})
	t.Run("connection closed", func(t *testing.T) {
		listen := async(func() (*mcp.Subscription, error) { return c.Listen(ctx, mcp.SubscriptionFilter{}) })
		m := s.expect("subscriptions/listen")
		s.notify("notifications/subscriptions/acknowledged", fmt.Sprintf(`{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":%s}}`, m.ID))
		sub, err := listen(t)
		require.NoError(t, err)
		require.NoError(t, s.tr.Close())
		select {
		case <-sub.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("subscription not done")
		}
		assert.True(t, errors.Is(sub.Err(), mcp.ErrClosed))
	})
}
