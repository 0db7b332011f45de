package mcp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// goldenParams and goldenResults give the typed value of each method's
// params and result in the transcripts.
var (
	goldenParams = map[string]reflect.Type{
		"initialize":                               reflect.TypeFor[mcp.InitializeParams](),
		"tools/list":                               reflect.TypeFor[mcp.PaginatedParams](),
		"tools/call":                               reflect.TypeFor[mcp.CallToolParams](),
		"resources/list":                           reflect.TypeFor[mcp.PaginatedParams](),
		"resources/templates/list":                 reflect.TypeFor[mcp.PaginatedParams](),
		"resources/read":                           reflect.TypeFor[mcp.ReadResourceParams](),
		"resources/subscribe":                      reflect.TypeFor[mcp.SubscribeParams](),
		"resources/unsubscribe":                    reflect.TypeFor[mcp.UnsubscribeParams](),
		"prompts/list":                             reflect.TypeFor[mcp.PaginatedParams](),
		"prompts/get":                              reflect.TypeFor[mcp.GetPromptParams](),
		"completion/complete":                      reflect.TypeFor[mcp.CompleteParams](),
		"logging/setLevel":                         reflect.TypeFor[mcp.SetLevelParams](),
		"sampling/createMessage":                   reflect.TypeFor[mcp.CreateMessageParams](),
		"elicitation/create":                       reflect.TypeFor[mcp.ElicitParams](),
		"tasks/get":                                reflect.TypeFor[mcp.GetTaskParams](),
		"tasks/result":                             reflect.TypeFor[mcp.GetTaskPayloadParams](),
		"tasks/cancel":                             reflect.TypeFor[mcp.CancelTaskParams](),
		"tasks/list":                               reflect.TypeFor[mcp.PaginatedParams](),
		"tasks/update":                             reflect.TypeFor[mcp.UpdateTaskParams](),
		"subscriptions/listen":                     reflect.TypeFor[mcp.ListenParams](),
		"notifications/cancelled":                  reflect.TypeFor[mcp.CancelledParams](),
		"notifications/progress":                   reflect.TypeFor[mcp.ProgressParams](),
		"notifications/message":                    reflect.TypeFor[mcp.LoggingMessageNotificationParams](),
		"notifications/resources/updated":          reflect.TypeFor[mcp.ResourceUpdatedNotificationParams](),
		"notifications/elicitation/complete":       reflect.TypeFor[mcp.ElicitationCompleteNotificationParams](),
		"notifications/tasks/status":               reflect.TypeFor[mcp.TaskStatusNotificationParams](),
		"notifications/subscriptions/acknowledged": reflect.TypeFor[mcp.SubscriptionAcknowledgedParams](),
		"notifications/initialized":                reflect.TypeFor[mcp.NotificationParams](),
		"notifications/tools/list_changed":         reflect.TypeFor[mcp.NotificationParams](),
		"notifications/resources/list_changed":     reflect.TypeFor[mcp.NotificationParams](),
		"notifications/prompts/list_changed":       reflect.TypeFor[mcp.NotificationParams](),
		"notifications/roots/list_changed":         reflect.TypeFor[mcp.NotificationParams](),
	}
	goldenResults = map[string]reflect.Type{
		"initialize":               reflect.TypeFor[mcp.InitializeResult](),
		"ping":                     reflect.TypeFor[mcp.EmptyResult](),
		"tools/list":               reflect.TypeFor[mcp.ListToolsResult](),
		"tools/call":               reflect.TypeFor[mcp.CallToolResult](),
		"resources/list":           reflect.TypeFor[mcp.ListResourcesResult](),
		"resources/templates/list": reflect.TypeFor[mcp.ListResourceTemplatesResult](),
		"resources/read":           reflect.TypeFor[mcp.ReadResourceResult](),
		"resources/subscribe":      reflect.TypeFor[mcp.EmptyResult](),
		"resources/unsubscribe":    reflect.TypeFor[mcp.EmptyResult](),
		"prompts/list":             reflect.TypeFor[mcp.ListPromptsResult](),
		"prompts/get":              reflect.TypeFor[mcp.GetPromptResult](),
		"completion/complete":      reflect.TypeFor[mcp.CompleteResult](),
		"logging/setLevel":         reflect.TypeFor[mcp.EmptyResult](),
		"sampling/createMessage":   reflect.TypeFor[mcp.CreateMessageResult](),
		"elicitation/create":       reflect.TypeFor[mcp.ElicitResult](),
		"roots/list":               reflect.TypeFor[mcp.ListRootsResult](),
		"tasks/get":                reflect.TypeFor[mcp.GetTaskResult](),
		"tasks/result":             reflect.TypeFor[mcp.CallToolResult](),
		"tasks/cancel":             reflect.TypeFor[mcp.CancelTaskResult](),
		"tasks/list":               reflect.TypeFor[mcp.ListTasksResult](),
		"tasks/update":             reflect.TypeFor[mcp.EmptyResult](),
		"server/discover":          reflect.TypeFor[mcp.DiscoverResult](),
	}
)

// goldenResultType returns the type of a result of method: the shape the
// result has when it is not the method's usual one (a task was created, the
// server needs input first, a 2026-07-28 task's details).
func goldenResultType(method string, result jsontext.Value) reflect.Type {
	var probe struct {
		ResultType string         `json:"resultType"`
		Task       jsontext.Value `json:"task"`
		TaskID     string         `json:"taskId"`
	}
	_ = jsonv2.Unmarshal(result, &probe)
	switch {
	case probe.ResultType == "input_required":
		return reflect.TypeFor[mcp.InputRequiredResult]()
	case probe.ResultType == "task":
		return reflect.TypeFor[mcp.TaskCreatedResult]()
	case probe.Task != nil && method == "tools/call":
		return reflect.TypeFor[mcp.CreateTaskResult]()
	case probe.TaskID != "" && method == "tasks/get" && probe.ResultType != "":
		return reflect.TypeFor[mcp.DetailedTask]()
	}
	return goldenResults[method]
}

// TestStandardJSONGoldenMessages takes the params and result of every
// message in the golden transcripts, decodes them into their typed value
// with keel's codec and with encoding/json, requires the same value, encodes
// that value with both, and requires the same bytes, which must hold the
// same JSON as the transcript (members the type does not hold aside).
func TestStandardJSONGoldenMessages(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	checked := 0
	for _, name := range files {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, f := range mcptest.ParseTxtar(data).Files {
			if f.Name == "server" {
				continue
			}
			t.Run(filepath.Base(name)+"/"+f.Name, func(t *testing.T) {
				checked += goldenSession(t, f.Data)
			})
		}
	}
	t.Logf("%d params and results compared", checked)
	assert.Greater(t, checked, 200, "the transcripts hold hundreds of typed messages")
}

// goldenSession checks each typed member of one session's messages and
// returns how many it checked.
func goldenSession(t *testing.T, data []byte) int {
	t.Helper()
	pending := map[string]string{} // direction+id of a request → its method
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		var dir string
		switch {
		case strings.HasPrefix(line, "> "):
			dir = "client"
		case strings.HasPrefix(line, "< "):
			dir = "server"
		default:
			continue
		}
		raw := []byte(line[2:])
		var msgs []map[string]jsontext.Value
		if jsonrpc.IsBatch(raw) {
			if jsonv2.Unmarshal(raw, &msgs) != nil {
				continue
			}
		} else {
			var m map[string]jsontext.Value
			if jsonv2.Unmarshal(raw, &m) != nil {
				continue // a malformed line the transcript sends on purpose
			}
			msgs = append(msgs, m)
		}
		for _, m := range msgs {
			var method string
			_ = jsonv2.Unmarshal(m["method"], &method)
			id := string(m["id"])
			switch {
			case method != "":
				if id != "" {
					pending[dir+id] = method
				}
				if typ, ok := goldenParams[method]; ok && m["params"] != nil {
					goldenCheck(t, line, typ, m["params"], dir == "server")
					n++
				}
			case m["result"] != nil:
				other := map[string]string{"client": "server", "server": "client"}[dir]
				method := pending[other+id]
				if typ := goldenResultType(method, m["result"]); typ != nil {
					goldenCheck(t, line, typ, m["result"], dir == "server")
					n++
				}
			}
		}
	}
	return n
}

// goldenCheck decodes raw into a value of typ with both codecs and checks
// what it must (see TestStandardJSONGoldenMessages).
func goldenCheck(t *testing.T, line string, typ reflect.Type, raw jsontext.Value, fromServer bool) {
	t.Helper()
	viaKeel, viaStd := reflect.New(typ), reflect.New(typ)
	keelErr := jsonrpc.Unmarshal(raw, viaKeel.Interface())
	stdErr := json.Unmarshal(raw, viaStd.Interface())
	if keelErr != nil {
		// Params the server refuses (the transcript checks the error).
		assert.Error(t, stdErr, "keel refuses %s (%v) in %s; encoding/json must too", raw, keelErr, line)
		return
	}
	require.NoError(t, stdErr, "encoding/json decodes %s in %s", raw, line)
	require.Equal(t, viaKeel.Elem().Interface(), viaStd.Elem().Interface(), "both codecs decode %s", raw)
	keel, keelErr := jsonrpc.Marshal(viaKeel.Elem().Interface())
	std, stdErr := json.Marshal(viaStd.Elem().Interface())
	if keelErr != nil {
		// A client's line the server refuses (a completion without a
		// reference) decodes, and then has no wire form.
		require.False(t, fromServer, "keel cannot re-encode what it wrote: %v", keelErr)
		assert.Error(t, stdErr, "keel cannot encode %s (%v); encoding/json must not either", line, keelErr)
		return
	}
	require.NoError(t, stdErr)
	var esc bytes.Buffer
	json.HTMLEscape(&esc, keel)
	require.Equal(t, esc.String(), string(std), "encoding/json writes the bytes keel writes for %s", typ)
	if fromServer {
		// What keel wrote, the typed value writes again; a client's line
		// may leave out required members or hold members no type has.
		assert.Equal(t, canonicalJSON(t, raw, true), canonicalJSON(t, keel, false), "%s re-encodes the transcript's %s", typ, line)
	}
}

// stampedMembers are the members a 2026-07-28 server adds to every result
// as it is written (its engine's, not the result type's).
var stampedMembers = []string{"resultType", "ttlMs", "cacheScope"}

// canonicalJSON re-encodes JSON with object members sorted, without the
// stamped members when unstamp is set.
func canonicalJSON(t *testing.T, b []byte, unstamp bool) string {
	t.Helper()
	var v any
	require.NoError(t, jsonv2.Unmarshal(b, &v))
	if obj, ok := v.(map[string]any); ok && unstamp {
		for _, k := range stampedMembers {
			if k != "resultType" || obj[k] == "complete" {
				delete(obj, k)
			}
		}
	}
	out, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
	require.NoError(t, err)
	return string(out)
}
