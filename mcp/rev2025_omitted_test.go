//go:build keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// clientRequestTools has one tool, "ask-client", which tries every
// server-to-client request of the session and answers, one per line,
// whether each was refused with ErrNoClientRequests.
type clientRequestTools struct{ modernTools }

func (t clientRequestTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if call.Name != "ask-client" {
		return t.modernTools.CallTool(ctx, call)
	}
	ss := mcp.SessionFromContext(ctx)
	_, e1 := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1})
	_, e2 := ss.Elicit(ctx, &mcp.ElicitParams{Message: "m"})
	_, e3 := ss.ListRoots(ctx)
	e4 := ss.Ping(ctx)
	e5 := ss.NotifyElicitationComplete(ctx, "e")
	out := ""
	for _, err := range []error{e1, e2, e3, e4, e5} {
		out += fmt.Sprintln(errors.Is(err, mcp.ErrNoClientRequests))
	}
	return mcp.TextResult(out), nil
}

// TestOmit2025ServesOnly20260728 runs with the build tag keel_omit2025:
// a 2026-07-28 request is served, and what only the 2025 rules serve is
// refused as the package documents it.
func TestOmit2025ServesOnly20260728(t *testing.T) {
	c := startRaw(t, modernOptions(&modernTools{}))
	tests := []struct {
		name, line string
		code       float64 // 0: a result
		check      func(t *testing.T, m map[string]any)
	}{
		{"2026-07-28 tools/call is served", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello",` + modernMeta + `}}`, 0,
			func(t *testing.T, m map[string]any) {
				res := m["result"].(map[string]any)
				assert.Equal(t, "complete", res["resultType"])
				assert.Equal(t, "hello", res["content"].([]any)[0].(map[string]any)["text"])
			}},
		{"server/discover lists 2026-07-28 alone", `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + modernMeta + `}}`, 0,
			func(t *testing.T, m map[string]any) {
				assert.Equal(t, []any{"2026-07-28"}, m["result"].(map[string]any)["supportedVersions"])
			}},
		{"2025 initialize is refused with -32022", `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`, -32022,
			func(t *testing.T, m map[string]any) {
				e := m["error"].(map[string]any)
				assert.Contains(t, e["message"], `"2025-11-25"`)
				assert.Contains(t, e["message"], "2026-07-28 only")
				assert.Contains(t, e["message"], "not negotiated by initialize")
				data := e["data"].(map[string]any)
				assert.Equal(t, []any{"2026-07-28"}, data["supported"])
				assert.Equal(t, "2025-11-25", data["requested"])
				assert.NotEmpty(t, data["correlationId"])
			}},
		{"initialize asking for 2026-07-28 is told to use _meta", `{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"confused","version":"1"}}}`, -32022,
			func(t *testing.T, m map[string]any) {
				e := m["error"].(map[string]any)
				assert.NotContains(t, e["message"], `Unsupported protocol version: "2026-07-28"`, "2026-07-28 is supported: the message must not say otherwise")
				assert.Contains(t, e["message"], "2026-07-28 is not negotiated by initialize")
				assert.Contains(t, e["message"], `"io.modelcontextprotocol/protocolVersion" in its _meta`)
				data := e["data"].(map[string]any)
				assert.Equal(t, []any{"2026-07-28"}, data["supported"])
				assert.Equal(t, "2026-07-28", data["requested"])
			}},
		{"initialize without params names no revision", `{"jsonrpc":"2.0","id":4,"method":"initialize"}`, -32022,
			func(t *testing.T, m map[string]any) {
				assert.Equal(t, "", m["error"].(map[string]any)["data"].(map[string]any)["requested"])
			}},
		{"a request without _meta gets the 2026-07-28 rules", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, -32602, nil},
		{"ping (2025) does not exist", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{` + modernMeta + `}}`, -32601, nil},
		{"logging/setLevel (2025) does not exist", `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug",` + modernMeta + `}}`, -32601, nil},
		{"tasks/list (2025-11-25) does not exist", `{"jsonrpc":"2.0","id":8,"method":"tasks/list","params":{` + modernMeta + `}}`, -32601, nil},
		{"a batch (2025-03-26) is refused", `[{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{` + modernMeta + `}}]`, -32600,
			func(t *testing.T, m map[string]any) {
				assert.Contains(t, m["error"].(map[string]any)["message"], "batches are not accepted")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.send(tt.line)
			m := c.recv()
			if tt.code == 0 {
				require.Contains(t, m, "result", "%v", m)
			} else {
				require.Contains(t, m, "error", "%v", m)
				assert.Equal(t, tt.code, m["error"].(map[string]any)["code"])
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
	// The 2025 notification is ignored, and the connection serves on.
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"hello",` + modernMeta + `}}`)
	assert.Equal(t, float64(9), c.recv()["id"])
}

// TestOmit2025NoClientRequests: every server-to-client request of a
// Session returns an error matching ErrNoClientRequests and sends nothing.
func TestOmit2025NoClientRequests(t *testing.T) {
	o := modernOptions(&modernTools{})
	o.Tools = clientRequestTools{}
	c := startRaw(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask-client",` + modernMeta + `}}`)
	m := c.recv()
	res := m["result"].(map[string]any)
	assert.Equal(t, "true\ntrue\ntrue\ntrue\ntrue\n", res["content"].([]any)[0].(map[string]any)["text"])
}

// TestOmit2025ClientConnect: a Client with default options speaks
// 2026-07-28 (server/discover, then requests naming the revision), as the
// quick start does; one told to speak a 2025 revision is refused by
// Connect itself (rev2025_omitted_client_test.go).
func TestOmit2025ClientConnect(t *testing.T) {
	ct, wait := mcptest.StartServer(t, modernOptions(&modernTools{}), nil)
	c := mcp.NewClient(quietClient)
	require.NoError(t, c.Connect(context.Background(), ct))
	assert.Equal(t, mcp.Version20260728, c.ProtocolVersion())
	require.NotNil(t, c.DiscoverResult(), "Connect called server/discover")
	assert.Equal(t, []string{mcp.Version20260728}, c.DiscoverResult().SupportedVersions)
	res, err := c.CallTool(context.Background(), "hello", nil)
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Content[0].Text)
	require.NoError(t, c.Close())
	require.NoError(t, wait())
}

// channelTools has one tool, "outside", which tries to reach the client
// outside its request (Session.Log and Session.Notify with a context of no
// request) and inside it (Session.Notify, ClientLogger), and answers
// whether each Notify was refused with ErrNoChannel and what each Log
// returned.
type channelTools struct{ modernTools }

func (t channelTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if call.Name != "outside" {
		return t.modernTools.CallTool(ctx, call)
	}
	ss := mcp.SessionFromContext(ctx)
	bg := context.Background()
	e1 := ss.Log(bg, mcp.LoggingLevelEmergency, "outside", "not sent")
	e2 := ss.Notify(bg, "notifications/custom", nil)
	e3 := ss.Notify(ctx, "notifications/custom", nil)
	mcp.ClientLogger(ctx).Warn("inside")
	mcp.ClientLogger(ctx).Debug("below the request's level")
	return mcp.TextResult(fmt.Sprintln(e1, errors.Is(e2, mcp.ErrNoChannel), errors.Is(e3, mcp.ErrNoChannel))), nil
}

// TestOmit2025NothingOutsideARequest: without the 2025 rules there is no
// session to reach a client on outside a request. Session.Log with a
// context of no request sends nothing even with ServerOptions.LogLevel at
// debug (the 2025 session's level is not used), Session.Notify returns
// ErrNoChannel, and a request gets the log messages at or above its own
// logLevel only.
func TestOmit2025NothingOutsideARequest(t *testing.T) {
	o := modernOptions(&modernTools{})
	o.Tools = channelTools{}
	o.LogLevel = mcp.LoggingLevelDebug
	c := startRaw(t, o)
	withLevel := strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"io.modelcontextprotocol/logLevel":"info",`, 1)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"outside",` + withLevel + `}}`)
	// What the tool sent before its answer arrives before it, in order.
	m := c.recv()
	require.Equal(t, "notifications/message", m["method"], "%v", m)
	params := m["params"].(map[string]any)
	assert.Equal(t, "warning", params["level"])
	assert.Equal(t, "inside", params["data"].(map[string]any)["message"])
	m = c.recv()
	require.Equal(t, float64(1), m["id"], "only the request's own log message came before the answer: %v", m)
	res := m["result"].(map[string]any)
	assert.Equal(t, "<nil> true true\n", res["content"].([]any)[0].(map[string]any)["text"])

	// A request without a logLevel gets no log message at all.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"outside",` + modernMeta + `}}`)
	m = c.recv()
	require.Equal(t, float64(2), m["id"], "%v", m)
}
