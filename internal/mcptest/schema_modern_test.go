package mcptest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckServerMessageModern(t *testing.T) {
	lookup := MethodsByID{"1": "tools/call", "2": "server/discover", "3": "tools/list", "4": "prompts/get", "5": "resources/read",
		"6": "ping", "7": "tasks/get", "8": "subscriptions/listen", "9": "completion/complete", "10": "initialize"}.Lookup
	const (
		serverInfo = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}`
		discover   = `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],
			"capabilities":{"tools":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}}},"ttlMs":0,"cacheScope":"public",` + serverInfo + `}}`
		inputRequired = `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"abc",
			"inputRequests":{"user_name":{"method":"elicitation/create","params":{"message":"What is your name?",
			"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}},
			"q":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}},
			"r":{"method":"roots/list","params":{}}}}}`
	)
	tests := []struct {
		name, msg string
		wantErr   string // "" = valid
	}{
		{"discover", discover, ""},
		{"discover without cache hints", `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}}`, "ttlMs"},
		{"discover with a bad cacheScope", `{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":1,"cacheScope":"shared"}}`, "DiscoverResult"},
		{"tool result", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"x"}],` + serverInfo + `}}`, ""},
		{"tool result without resultType", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`, "resultType"},
		{"tool result with an unknown resultType", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"partial","content":[]}}`, "unknown resultType"},
		{"input required on tools/call", inputRequired, ""},
		{"input required on prompts/get", `{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","requestState":"s"}}`, ""},
		{"input required on resources/read", `{"jsonrpc":"2.0","id":5,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}}`, ""},
		{"input required on tools/list", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","requestState":"s"}}`, "only tools/call"},
		{"input required with neither member", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`, "inputRequests or requestState"},
		{"input request with an envelope member", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"r":{"jsonrpc":"2.0","id":1,"method":"roots/list"}}}}`, "does not define"},
		{"input request of an unknown method", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"p":{"method":"ping"}}}}`, "InputRequiredResult"},
		{"input required with content", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s","content":[]}}`, "does not define"},
		{"task result (extension)", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t","status":"working"}}`, ""},
		{"task result on prompts/get", `{"jsonrpc":"2.0","id":4,"result":{"resultType":"task","taskId":"t"}}`, "only tools/call"},
		{"tasks/get (extension)", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","taskId":"t","status":"completed"}}`, ""},
		{"tools/list", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","tools":[],"ttlMs":60000,"cacheScope":"public"}}`, ""},
		{"tools/list without cache hints", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","tools":[]}}`, "cacheScope"},
		{"completion", `{"jsonrpc":"2.0","id":9,"result":{"resultType":"complete","completion":{"values":["a"]}}}`, ""},
		{"listen ends", `{"jsonrpc":"2.0","id":8,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":8}}}`, ""},
		{"ping is gone", `{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete"}}`, "does not exist"},
		{"initialize is gone", `{"jsonrpc":"2.0","id":10,"result":{"resultType":"complete"}}`, "does not exist"},
		{"subscription acknowledged", `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
			"params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}`, ""},
		{"subscription acknowledged without notifications", `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}`, "ServerNotification"},
		{"tagged list_changed", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":8}}}`, ""},
		{"server request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "servers send none"},
		{"elicitation request", `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{}}}}`, "servers send none"},
		{"-32022", `{"jsonrpc":"2.0","id":"a","error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"v999"}}}`, ""},
		{"-32022 without data", `{"jsonrpc":"2.0","id":"a","error":{"code":-32022,"message":"Unsupported protocol version"}}`, "UnsupportedProtocolVersionError"},
		{"-32022 without requested", `{"jsonrpc":"2.0","id":"a","error":{"code":-32022,"message":"m","data":{"supported":["2026-07-28"]}}}`, "requested"},
		{"-32021", `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m","data":{"requiredCapabilities":{"sampling":{}}}}}`, ""},
		{"-32021 with a list", `{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m","data":{"requiredCapabilities":["sampling"]}}}`, "MissingRequiredClientCapabilityError"},
		{"-32020", `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}`, ""},
		{"-32602", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"test://x"}}}`, ""},
		{"-32002 is not used", `{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found"}}`, "not used"},
		{"-32042 is not used", `{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"URL elicitation required"}}`, "not used"},
		{"undefined reserved code", `{"jsonrpc":"2.0","id":1,"error":{"code":-32050,"message":"m"}}`, "reserved and undefined"},
		{"parse error with id null", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, ""},
		{"batch", `[{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"public"}}]`, "no batches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckServerMessage(RevisionModern, lookup, []byte(tt.msg))
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestCheckResultModern(t *testing.T) {
	require.NoError(t, CheckResult(RevisionModern, "tools/call", []byte(`{"resultType":"input_required","requestState":"s"}`)))
	require.NoError(t, CheckResult(RevisionModern, "", []byte(`{"resultType":"complete"}`)))
	require.Error(t, CheckResult(RevisionModern, "", []byte(`{}`)), "every modern result has resultType")
	require.Error(t, CheckResult(RevisionModern, "tasks/result", []byte(`{"resultType":"complete"}`)))
	require.Error(t, CheckResult(RevisionModern, "no/such/method", []byte(`{"resultType":"complete"}`)))
	// The modern methods do not exist before 2026-07-28.
	require.ErrorContains(t, CheckResult("2025-11-25", "server/discover", []byte(`{}`)), "does not exist in this revision")
	require.ErrorContains(t, CheckResult("2025-11-25", "subscriptions/listen", []byte(`{}`)), "does not exist in this revision")
	// Legacy revisions keep their rules: no resultType needed, -32002 allowed.
	require.NoError(t, CheckResult("2025-11-25", "tools/call", []byte(`{"content":[]}`)))
	require.NoError(t, CheckServerMessage("2025-11-25", nil, []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found"}}`)))
}
