package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// Every protocol error echoes the correlationId of the request it answers
// (its _meta.correlationId) in error.data, in both revisions: the
// handshake and method errors, invalid params, an unknown resource (-32002
// in 2025, -32602 in 2026-07-28), an unsupported revision (-32022), a
// missing client capability (-32021), URL elicitation required (-32042),
// the input rounds' errors (MaxUsedStates included), the task errors,
// keel's limit errors (MaxURIBytes, MaxSubscriptionBytes, MaxListens) and
// the errors a handler returns: data that is a map, a raw JSON object or a
// StructuredError without an id gets a copy with the request's id (the
// handler's value is left as it was), a string is sent as it is, and an
// error too large to send is sent again with only the id as its data.
func TestEveryProtocolErrorCarriesItsCorrelationID(t *testing.T) {
	o := mcptest.ServerOptions(&extTaskTools{})
	o.Resources = mcptest.NewCatalog()
	o.Tasks = &mcp.TaskOptions{}
	o.StateKey = []byte("0123456789abcdef0123456789abcdef")
	o.StateSingleUse, o.MaxUsedStates = true, 1
	o.MaxListens = 1             // one open listen fills it
	o.MaxSubscriptionBytes = 200 // one subscription of a 150-byte URI passes it
	// The handler's own data: the map and the StructuredError stay as
	// they are (checked at the end); what is sent is a copy.
	handlerMap := map[string]any{"reason": "quota"}
	handlerSE := &mcp.StructuredError{Code: mcp.ErrInvalidArgument, Message: "bad input"}
	fail := func(code int64, data any) mcp.MethodHandler {
		return func(context.Context, *mcp.Request) (any, error) {
			return nil, &mcp.Error{Code: code, Message: "handler error", Data: data}
		}
	}
	o.Methods = map[string]mcp.MethodHandler{
		"x/url": func(context.Context, *mcp.Request) (any, error) {
			return nil, mcp.NewURLElicitationRequiredError("authorization required",
				mcp.ElicitParams{Message: "sign in", URL: "https://example.com/auth", ElicitationID: "e1"})
		},
		"x/map":    fail(1050, handlerMap),
		"x/se":     fail(1051, handlerSE),
		"x/raw":    fail(1052, json.RawMessage(` {"reason":"raw"} `)),
		"x/string": fail(1053, "plain text"),
		"x/huge":   fail(1054, map[string]any{"blob": strings.Repeat("x", 4<<20)}),
	}
	srv := mcp.NewServer(o)
	fresh, legacy, modern := connectRaw(t, srv, false, true), (*rawConn)(nil), connectRaw(t, srv, false, true)
	if served2025 {
		legacy = connectRaw(t, srv, true, true)
	}
	// Another connection holds the one listen MaxListens allows.
	listener := connectRaw(t, srv, false, true)
	listener.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{},` + `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}` + `}}`)
	listener.recv()
	longURI := "test://" + strings.Repeat("x", 9000)
	subURI := "test://" + strings.Repeat("s", 150)
	// dataIs checks that error.data is exactly want.
	dataIs := func(want any) func(*testing.T, map[string]any, string) {
		return func(t *testing.T, e map[string]any, _ string) { assert.Equal(t, want, e["data"], "%v", e) }
	}
	// onlyID checks that error.data is the correlation id alone.
	onlyID := func(t *testing.T, e map[string]any, corr string) {
		assert.Equal(t, map[string]any{"correlationId": corr}, e["data"], "%v", e)
	}
	// dataKeeps checks that error.data carries the id and keeps member
	// k's value v.
	dataKeeps := func(k string, v any) func(*testing.T, map[string]any, string) {
		return func(t *testing.T, e map[string]any, corr string) {
			data, ok := e["data"].(map[string]any)
			require.True(t, ok, "error.data is an object: %v", e)
			assert.Equal(t, corr, data["correlationId"], "%v", e)
			assert.Equal(t, v, data[k], "the handler's data is kept: %v", e)
		}
	}
	// meta2026 is the _meta of a 2026-07-28 request: the revision, the
	// client's capabilities (caps) and the correlationId.
	meta2026 := func(version, caps, corr string) string {
		return fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":%s,"correlationId":%q}`, version, caps, corr)
	}
	const v26 = "2026-07-28"
	// The server remembers one used requestState: answer one round, and
	// the next round's state is refused (MaxUsedStates).
	answers := `"inputResponses":{"a":{"action":"accept","content":{"name":"A"}},"b":{"action":"accept","content":{"name":"B"}}}`
	askRound := func(id int, extra string) map[string]any {
		modern.t = t
		modern.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask"%s,%s}}`, id, extra, meta2026(v26, noTaskCaps, "setup")))
		return modern.recv()
	}
	state := askRound(1001, "")["result"].(map[string]any)["requestState"].(string)
	require.Contains(t, askRound(1002, ","+answers+`,"requestState":"`+state+`"`), "result", "the first state is accepted")
	state = askRound(1003, "")["result"].(map[string]any)["requestState"].(string)
	tests := []struct {
		name   string
		c      *rawConn
		method string
		params string // the params' members, _meta aside
		meta   func(corr string) string
		code   float64
		// check, if set, checks the error instead of the default: error.data
		// is an object whose correlationId is corr.
		check func(t *testing.T, e map[string]any, corr string)
	}{
		{"2025: before initialize", fresh, "tools/list", ``, nil, -32002, nil},
		{"2025: unknown method", legacy, "acme/missing", ``, nil, -32601, nil},
		{"2025: invalid params", legacy, "resources/read", `"uri":5`, nil, -32602, nil},
		{"2025: unknown tool", legacy, "tools/call", `"name":"nope"`, nil, -32602, nil},
		{"2025: unknown resource", legacy, "resources/read", `"uri":"test://nope"`, nil, -32002, nil},
		{"2025: unknown task", legacy, "tasks/get", `"taskId":"nope"`, nil, -32602, nil},
		{"2025: a 2026-07-28 method", legacy, "server/discover", ``, nil, -32601, nil},
		{"2025: URL elicitation required", legacy, "x/url", ``, nil, -32042, nil},
		{"2025: URI over MaxURIBytes", legacy, "resources/read", `"uri":"` + longURI + `"`, nil, -32602, dataKeeps("details", map[string]any{"limit": "MaxURIBytes", "max": 8192.0})},
		{"2025: subscription over MaxURIBytes", legacy, "resources/subscribe", `"uri":"` + longURI + `"`, nil, -32602, dataKeeps("details", map[string]any{"limit": "MaxURIBytes", "max": 8192.0})},
		{"2025: subscriptions over MaxSubscriptionBytes", legacy, "resources/subscribe", `"uri":"` + subURI + `"`, nil, -32000, dataKeeps("details", map[string]any{"limit": "MaxSubscriptionBytes", "max": 200.0})},
		{"2025: handler data a map", legacy, "x/map", ``, nil, 1050, dataKeeps("reason", "quota")},
		{"2025: handler data a raw JSON object", legacy, "x/raw", ``, nil, 1052, dataKeeps("reason", "raw")},
		{"2025: handler data a StructuredError without id", legacy, "x/se", ``, nil, 1051, dataKeeps("code", "INVALID_ARGUMENT")},
		{"2025: handler data a string", legacy, "x/string", ``, nil, 1053, dataIs("plain text")},
		{"2025: handler error too large to send", legacy, "x/huge", ``, nil, 1054, onlyID},

		{"2026: unsupported revision", modern, "tools/list", ``, func(c string) string { return meta2026("2099-01-01", taskCaps, c) }, -32022, nil},
		{"2026: invalid _meta", modern, "tools/list", ``, func(c string) string {
			return fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"correlationId":%q}`, v26, c)
		}, -32602, nil},
		{"2026: unknown method", modern, "acme/missing", ``, func(c string) string { return meta2026(v26, taskCaps, c) }, -32601, nil},
		{"2026: a removed method", modern, "ping", ``, func(c string) string { return meta2026(v26, taskCaps, c) }, -32601, nil},
		{"2026: invalid params", modern, "resources/read", `"uri":5`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602, nil},
		{"2026: unknown resource", modern, "resources/read", `"uri":"test://nope"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602, nil},
		{"2026: a requestState that does not verify", modern, "tools/call", `"name":"ask","requestState":"forged"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602, nil},
		{"2026: MaxUsedStates reached", modern, "tools/call", `"name":"ask",` + answers + `,"requestState":"` + state + `"`, func(c string) string { return meta2026(v26, noTaskCaps, c) }, -32602, nil},
		{"2026: an inputResponse that is not an object", modern, "tools/call", `"name":"ask","inputResponses":{"a":1}`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602, nil},
		{"2026: tasks without the extension", modern, "tasks/get", `"taskId":"x"`, func(c string) string { return meta2026(v26, noTaskCaps, c) }, -32021, nil},
		{"2026: unknown task", modern, "tasks/get", `"taskId":"nope"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602, nil},
		{"2026: a legacy task method", modern, "tasks/result", `"taskId":"x"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32601, nil},
		{"2026: URI over MaxURIBytes", modern, "resources/read", `"uri":"` + longURI + `"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602, dataKeeps("details", map[string]any{"limit": "MaxURIBytes", "max": 8192.0})},
		{"2026: listen filter entry over MaxURIBytes", modern, "subscriptions/listen", `"notifications":{"resourceSubscriptions":["` + longURI + `"]}`, func(c string) string { return meta2026(v26, noTaskCaps, c) }, -32602, dataKeeps("details", map[string]any{"limit": "MaxURIBytes", "max": 8192.0})},
		{"2026: listen filter over MaxSubscriptionBytes", modern, "subscriptions/listen", `"notifications":{"resourceSubscriptions":["` + subURI + `"]}`, func(c string) string { return meta2026(v26, noTaskCaps, c) }, -32602, dataKeeps("details", map[string]any{"limit": "MaxSubscriptionBytes", "max": 200.0})},
		{"2026: MaxListens", modern, "subscriptions/listen", `"notifications":{}`, func(c string) string { return meta2026(v26, noTaskCaps, c) }, -32000, dataKeeps("details", map[string]any{"limit": "MaxListens", "max": 1.0})},
		{"2026: handler data a map", modern, "x/map", ``, func(c string) string { return meta2026(v26, noTaskCaps, c) }, 1050, dataKeeps("reason", "quota")},
		{"2026: handler data a raw JSON object", modern, "x/raw", ``, func(c string) string { return meta2026(v26, noTaskCaps, c) }, 1052, dataKeeps("reason", "raw")},
		{"2026: handler data a StructuredError without id", modern, "x/se", ``, func(c string) string { return meta2026(v26, noTaskCaps, c) }, 1051, dataKeeps("code", "INVALID_ARGUMENT")},
		{"2026: handler data a string", modern, "x/string", ``, func(c string) string { return meta2026(v26, noTaskCaps, c) }, 1053, dataIs("plain text")},
		{"2026: handler error too large to send", modern, "x/huge", ``, func(c string) string { return meta2026(v26, noTaskCaps, c) }, 1054, onlyID},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.meta == nil && !served2025 {
				t.Skip("the 2025 rules are compiled out (keel_omit2025)")
			}
			corr := fmt.Sprintf("corr-%d", i)
			meta := `"_meta":{"correlationId":"` + corr + `"}`
			if tt.meta != nil {
				meta = tt.meta(corr)
			}
			params := meta
			if tt.params != "" {
				params = tt.params + "," + meta
			}
			tt.c.t = t
			tt.c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, i, tt.method, params))
			m := tt.c.recv()
			e, ok := m["error"].(map[string]any)
			require.True(t, ok, "want an error, got %v", m)
			assert.Equal(t, tt.code, e["code"], "%v", e)
			if tt.check != nil {
				tt.check(t, e, corr)
				return
			}
			data, ok := e["data"].(map[string]any)
			require.True(t, ok, "error.data is an object: %v", e)
			assert.Equal(t, corr, data["correlationId"], "%v", e)
		})
	}
	assert.Equal(t, map[string]any{"reason": "quota"}, handlerMap, "the handler's map is not changed")
	assert.Empty(t, handlerSE.CorrelationID, "the handler's StructuredError is not changed")
}
