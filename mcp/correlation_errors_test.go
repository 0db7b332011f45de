package mcp_test

import (
	"context"
	"fmt"
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
// the input rounds' errors (MaxUsedStates included) and the task errors.
func TestEveryProtocolErrorCarriesItsCorrelationID(t *testing.T) {
	o := mcptest.ServerOptions(&extTaskTools{})
	o.Resources = mcptest.NewCatalog()
	o.Tasks = &mcp.TaskOptions{}
	o.StateKey = []byte("0123456789abcdef0123456789abcdef")
	o.StateSingleUse, o.MaxUsedStates = true, 1
	o.Methods = map[string]mcp.MethodHandler{"x/url": func(context.Context, *mcp.Request) (any, error) {
		return nil, mcp.NewURLElicitationRequiredError("authorization required",
			mcp.ElicitParams{Message: "sign in", URL: "https://example.com/auth", ElicitationID: "e1"})
	}}
	srv := mcp.NewServer(o)
	fresh, legacy, modern := connectRaw(t, srv, false, true), (*rawConn)(nil), connectRaw(t, srv, false, true)
	if served2025 {
		legacy = connectRaw(t, srv, true, true)
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
	}{
		{"2025: before initialize", fresh, "tools/list", ``, nil, -32002},
		{"2025: unknown method", legacy, "acme/missing", ``, nil, -32601},
		{"2025: invalid params", legacy, "resources/read", `"uri":5`, nil, -32602},
		{"2025: unknown tool", legacy, "tools/call", `"name":"nope"`, nil, -32602},
		{"2025: unknown resource", legacy, "resources/read", `"uri":"test://nope"`, nil, -32002},
		{"2025: unknown task", legacy, "tasks/get", `"taskId":"nope"`, nil, -32602},
		{"2025: a 2026-07-28 method", legacy, "server/discover", ``, nil, -32601},
		{"2025: URL elicitation required", legacy, "x/url", ``, nil, -32042},

		{"2026: unsupported revision", modern, "tools/list", ``, func(c string) string { return meta2026("2099-01-01", taskCaps, c) }, -32022},
		{"2026: invalid _meta", modern, "tools/list", ``, func(c string) string {
			return fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"correlationId":%q}`, v26, c)
		}, -32602},
		{"2026: unknown method", modern, "acme/missing", ``, func(c string) string { return meta2026(v26, taskCaps, c) }, -32601},
		{"2026: a removed method", modern, "ping", ``, func(c string) string { return meta2026(v26, taskCaps, c) }, -32601},
		{"2026: invalid params", modern, "resources/read", `"uri":5`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602},
		{"2026: unknown resource", modern, "resources/read", `"uri":"test://nope"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602},
		{"2026: a requestState that does not verify", modern, "tools/call", `"name":"ask","requestState":"forged"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602},
		{"2026: MaxUsedStates reached", modern, "tools/call", `"name":"ask",` + answers + `,"requestState":"` + state + `"`, func(c string) string { return meta2026(v26, noTaskCaps, c) }, -32602},
		{"2026: an inputResponse that is not an object", modern, "tools/call", `"name":"ask","inputResponses":{"a":1}`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602},
		{"2026: tasks without the extension", modern, "tasks/get", `"taskId":"x"`, func(c string) string { return meta2026(v26, noTaskCaps, c) }, -32021},
		{"2026: unknown task", modern, "tasks/get", `"taskId":"nope"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32602},
		{"2026: a legacy task method", modern, "tasks/result", `"taskId":"x"`, func(c string) string { return meta2026(v26, taskCaps, c) }, -32601},
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
			data, ok := e["data"].(map[string]any)
			require.True(t, ok, "error.data is an object: %v", e)
			assert.Equal(t, corr, data["correlationId"], "%v", e)
		})
	}
}
