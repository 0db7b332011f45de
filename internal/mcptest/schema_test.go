package mcptest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEverySchemaCompiles(t *testing.T) {
	for _, rev := range Revisions {
		r, err := loadRevision(rev)
		require.NoError(t, err, rev)
		for _, def := range []string{defResultResponse, defErrorResponse, defErrorObject, "JSONRPCNotification", "ServerNotification", "JSONRPCRequest", "Result", "CallToolResult", "ListToolsResult", "EmptyResult"} {
			assert.NotNil(t, r.plain[def], "%s: %s", rev, def)
			assert.NotNil(t, r.strict[def], "%s: %s", rev, def)
		}
		modern := rev == RevisionModern
		assert.Equal(t, modern, r.modern, rev)
		assert.False(t, r.bareBodies && rev >= "2025-11-25", "%s: envelope members in the definitions", rev)
		assert.Equal(t, !modern, r.plain["InitializeResult"] != nil, "%s: initialize", rev)
		assert.Equal(t, !modern, r.plain["ServerRequest"] != nil, "%s: server requests", rev)
		assert.Equal(t, modern, r.plain["DiscoverResult"] != nil, "%s: discover", rev)
		assert.Equal(t, modern, r.plain["InputRequiredResult"] != nil, "%s: input-required results", rev)
		assert.Equal(t, rev == "2025-03-26", r.plain["JSONRPCBatchResponse"] != nil, "%s: batches", rev)
		assert.Equal(t, rev == "2025-11-25", r.plain["GetTaskResult"] != nil, "%s: tasks", rev)
	}
	_, err := loadRevision("2000-01-01")
	require.Error(t, err)
}

func TestCheckServerMessage(t *testing.T) {
	lookup := MethodsByID{"1": "tools/call", `"init"`: "initialize", "2": "ping", "3": "tasks/get", "4": "tools/list"}.Lookup
	const (
		callText   = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`
		callStruct = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}}`
		callAudio  = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"audio","data":"AA==","mimeType":"audio/wav"}]}}`
		callLink   = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}}`
		nullErr    = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":{"correlationId":"c"}}}`
		initIcons  = `{"jsonrpc":"2.0","id":"init","result":{"protocolVersion":"%s","capabilities":{},"serverInfo":{"name":"s","version":"1","icons":[{"src":"https://example.com/i.png"}]}}}`
		batch      = `[{"jsonrpc":"2.0","id":2,"result":{}},` + nullErr + `]`
	)
	tests := []struct {
		name, rev, msg string
		wantErr        string // "" = valid
	}{
		{"text result", "2024-11-05", callText, ""},
		{"text result", "2025-11-25", callText, ""},
		{"structuredContent before 2025-06-18", "2025-03-26", callStruct, "does not define"},
		{"structuredContent", "2025-06-18", callStruct, ""},
		{"audio before 2025-03-26", "2024-11-05", callAudio, "not a valid CallToolResult"},
		{"audio", "2025-03-26", callAudio, ""},
		{"resource_link before 2025-06-18", "2025-03-26", callLink, "not a valid CallToolResult"},
		{"resource_link", "2025-06-18", callLink, ""},
		{"result without content", "2025-11-25", `{"jsonrpc":"2.0","id":1,"result":{}}`, "missing property 'content'"},
		{"ping result", "2025-11-25", `{"jsonrpc":"2.0","id":2,"result":{}}`, ""},
		{"result for an unknown id", "2025-11-25", `{"jsonrpc":"2.0","id":99,"result":{"anything":1}}`, ""},
		{"tasks before 2025-11-25", "2025-06-18", `{"jsonrpc":"2.0","id":3,"result":{}}`, "does not exist in this revision"},
		{"icons before 2025-11-25", "2025-06-18", fmt.Sprintf(initIcons, "2025-06-18"), "does not define"},
		{"icons", "2025-11-25", fmt.Sprintf(initIcons, "2025-11-25"), ""},
		{"id null error", "2024-11-05", nullErr, ""},
		{"id null error", "2025-11-25", nullErr, ""},
		{"id null error with extra member", "2025-11-25", `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"},"x":1}`, `member "x"`},
		{"id null error, bad jsonrpc", "2025-11-25", `{"jsonrpc":"1.0","id":null,"error":{"code":1,"message":"m"}}`, "jsonrpc"},
		{"id null error, bad error object", "2025-06-18", `{"jsonrpc":"2.0","id":null,"error":{"code":"x","message":"m"}}`, "error object"},
		{"error", "2025-11-25", `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"Method not found"}}`, ""},
		{"error with a fractional code", "2025-11-25", `{"jsonrpc":"2.0","id":"a","error":{"code":1.5,"message":"m"}}`, "error response"},
		{"error without id", "2025-11-25", `{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`, ""},
		{"error without id", "2024-11-05", `{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}`, "missing property 'id'"},
		{"error and result", "2025-11-25", `{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"m"}}`, "does not define"},
		{"batch", "2025-03-26", batch, ""},
		{"batch", "2025-06-18", batch, "no batches"},
		{"batch", "2024-11-05", batch, "no batches"},
		{"empty batch", "2025-03-26", `[]`, "empty batch"},
		{"batch with a bad element", "2025-03-26", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, "batch element 0"},
		{"notification", "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`, ""},
		{"notification", "2024-11-05", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`, ""},
		{"notification with an undefined member", "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","extra":1}`, "does not define"},
		{"notification with an undefined member", "2024-11-05", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","extra":1}`, "does not define"},
		{"unknown notification", "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/nope"}`, "ServerNotification"},
		{"server request", "2024-11-05", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, ""},
		{"unknown server request", "2024-11-05", `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, "ServerRequest"},
		{"not an object", "2025-11-25", `42`, "must be a JSON object"},
		{"neither", "2025-11-25", `{"jsonrpc":"2.0","id":1}`, "neither"},
		{"invalid JSON", "2025-11-25", `{"jsonrpc":"2.0",`, "not valid JSON"},
		{"duplicate member names", "2025-11-25", `{"jsonrpc":"2.0","id":2,"id":2,"result":{}}`, "not valid JSON"},
		{"invalid UTF-8", "2025-11-25", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"result\":{}}", "not valid JSON"},
		{"unknown revision", "2000-01-01", callText, "no schema"},
	}
	for _, tt := range tests {
		t.Run(tt.rev+"/"+tt.name, func(t *testing.T) {
			err := CheckServerMessage(tt.rev, lookup, []byte(tt.msg))
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestCheckResult(t *testing.T) {
	require.NoError(t, CheckResult("2025-11-25", "ping", []byte(`{}`)))
	require.NoError(t, CheckResult("2025-11-25", "", []byte(`{"x":1}`)))
	require.NoError(t, CheckResult("2025-11-25", "tools/list", []byte(`{"tools":[{"name":"a","inputSchema":{"type":"object","$schema":"https://json-schema.org/draft/2020-12/schema"}}]}`)),
		"a tool's inputSchema stays open")
	require.Error(t, CheckResult("2025-11-25", "tools/list", []byte(`{"tools":[{"name":"a","inputSchema":{"type":"string"}}]}`)))
	require.Error(t, CheckResult("2025-11-25", "tools/list", []byte(`{"tools":[{"name":"a","inputSchema":{"type":"object"},"extra":1}]}`)))
	require.Error(t, CheckResult("2025-11-25", "no/such/method", []byte(`{}`)))
	require.Error(t, CheckResult("2025-11-25", "ping", []byte(`{`)))
	require.NoError(t, CheckResult("2025-11-25", "tools/call", []byte(`{"task":{"taskId":"t","status":"working","createdAt":"2025-11-25T12:00:00Z","lastUpdatedAt":"2025-11-25T12:00:00Z","ttl":null}}`)),
		"a task-augmented call answers with CreateTaskResult")
	ValidateResult(t, "2025-06-18", "initialize", []byte(`{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","title":"S","version":"1"}}`))
}

func TestIDKey(t *testing.T) {
	assert.Equal(t, `"a"`, IDKey([]byte(`"\u0061"`)))
	assert.Equal(t, `"é"`, IDKey([]byte(`"\u00e9"`)))
	assert.Equal(t, `1`, IDKey([]byte(` 1 `)))
	assert.Equal(t, `-12`, IDKey([]byte(`-12`)))
	assert.Equal(t, IDKey([]byte(`"x"`)), instanceIDKey("x"))
}

func TestTracker(t *testing.T) {
	tr := NewTracker()
	assert.Equal(t, LatestRevision, tr.Revision())
	tr.Sent([]byte(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{}}`))
	tr.Sent([]byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call"},{"jsonrpc":"2.0","method":"notifications/x"}]`))
	tr.Sent([]byte(`not json`))
	assert.Equal(t, "tools/call", tr.Lookup("1"))

	// The initialize result is checked against the revision it names.
	require.Error(t, tr.Received([]byte(`{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1","title":"too new"}}}`)))
	assert.Equal(t, "2025-03-26", tr.Revision())
	require.NoError(t, tr.Received([]byte(`{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)))
	require.ErrorContains(t, tr.Received([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{}}}`)), "does not define")
	require.ErrorContains(t, tr.Received([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}`)), "no request of the client")
	require.NoError(t, tr.Received([]byte(`[{"jsonrpc":"2.0","id":1,"result":{"content":[]}}]`)), "batches in 2025-03-26")

	tr2 := NewTracker()
	tr2.Sent([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`))
	require.ErrorContains(t, tr2.Received([]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)), "1999-01-01")
}

func TestStrictifyLeavesOpenMembersOpen(t *testing.T) {
	for _, rev := range Revisions {
		// error.data, _meta and structuredContent (where it exists) hold anything.
		require.NoError(t, CheckServerMessage(rev, nil, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"any":{"thing":[1]}}}}`)), rev)
		method, rt := "ping", ""
		if rev == RevisionModern { // no ping; resultType everywhere
			method, rt = "", `"resultType":"complete",`
		}
		require.NoError(t, CheckResult(rev, method, []byte(`{`+rt+`"_meta":{"a/b":{"c":1}}}`)), rev)
		require.NoError(t, CheckResult(rev, method, []byte(`{`+rt+`"extra":1}`)), "%s: EmptyResult is Result, which is open", rev)
	}
}
