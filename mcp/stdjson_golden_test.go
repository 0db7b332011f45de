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
		mcp.MethodInitialize:                      reflect.TypeFor[mcp.InitializeParams](),
		mcp.MethodToolsList:                       reflect.TypeFor[mcp.PaginatedParams](),
		mcp.MethodToolsCall:                       reflect.TypeFor[mcp.CallToolParams](),
		mcp.MethodResourcesList:                   reflect.TypeFor[mcp.PaginatedParams](),
		mcp.MethodResourcesTemplatesList:          reflect.TypeFor[mcp.PaginatedParams](),
		mcp.MethodResourcesRead:                   reflect.TypeFor[mcp.ReadResourceParams](),
		mcp.MethodResourcesSubscribe:              reflect.TypeFor[mcp.SubscribeParams](),
		mcp.MethodResourcesUnsubscribe:            reflect.TypeFor[mcp.UnsubscribeParams](),
		mcp.MethodPromptsList:                     reflect.TypeFor[mcp.PaginatedParams](),
		mcp.MethodPromptsGet:                      reflect.TypeFor[mcp.GetPromptParams](),
		mcp.MethodCompletionComplete:              reflect.TypeFor[mcp.CompleteParams](),
		mcp.MethodLoggingSetLevel:                 reflect.TypeFor[mcp.SetLevelParams](),
		mcp.MethodSamplingCreateMessage:           reflect.TypeFor[mcp.CreateMessageParams](),
		mcp.MethodElicitationCreate:               reflect.TypeFor[mcp.ElicitParams](),
		mcp.MethodTasksGet:                        reflect.TypeFor[mcp.GetTaskParams](),
		mcp.MethodTasksResult:                     reflect.TypeFor[mcp.GetTaskPayloadParams](),
		mcp.MethodTasksCancel:                     reflect.TypeFor[mcp.CancelTaskParams](),
		mcp.MethodTasksList:                       reflect.TypeFor[mcp.PaginatedParams](),
		mcp.MethodTasksUpdate:                     reflect.TypeFor[mcp.UpdateTaskParams](),
		mcp.MethodSubscriptionsListen:             reflect.TypeFor[mcp.ListenParams](),
		mcp.NotificationCancelled:                 reflect.TypeFor[mcp.CancelledParams](),
		mcp.NotificationProgress:                  reflect.TypeFor[mcp.ProgressParams](),
		mcp.NotificationMessage:                   reflect.TypeFor[mcp.LoggingMessageNotificationParams](),
		mcp.NotificationResourceUpdated:           reflect.TypeFor[mcp.ResourceUpdatedNotificationParams](),
		mcp.NotificationElicitationComplete:       reflect.TypeFor[mcp.ElicitationCompleteNotificationParams](),
		mcp.NotificationTasksStatus:               reflect.TypeFor[mcp.TaskStatusNotificationParams](),
		mcp.NotificationSubscriptionsAcknowledged: reflect.TypeFor[mcp.SubscriptionAcknowledgedParams](),
		mcp.NotificationInitialized:               reflect.TypeFor[mcp.NotificationParams](),
		mcp.NotificationToolsListChanged:          reflect.TypeFor[mcp.NotificationParams](),
		mcp.NotificationResourcesListChanged:      reflect.TypeFor[mcp.NotificationParams](),
		mcp.NotificationPromptsListChanged:        reflect.TypeFor[mcp.NotificationParams](),
		mcp.NotificationRootsListChanged:          reflect.TypeFor[mcp.NotificationParams](),
	}
	goldenResults = map[string]reflect.Type{
		mcp.MethodInitialize:             reflect.TypeFor[mcp.InitializeResult](),
		mcp.MethodPing:                   reflect.TypeFor[mcp.EmptyResult](),
		mcp.MethodToolsList:              reflect.TypeFor[mcp.ListToolsResult](),
		mcp.MethodToolsCall:              reflect.TypeFor[mcp.CallToolResult](),
		mcp.MethodResourcesList:          reflect.TypeFor[mcp.ListResourcesResult](),
		mcp.MethodResourcesTemplatesList: reflect.TypeFor[mcp.ListResourceTemplatesResult](),
		mcp.MethodResourcesRead:          reflect.TypeFor[mcp.ReadResourceResult](),
		mcp.MethodResourcesSubscribe:     reflect.TypeFor[mcp.EmptyResult](),
		mcp.MethodResourcesUnsubscribe:   reflect.TypeFor[mcp.EmptyResult](),
		mcp.MethodPromptsList:            reflect.TypeFor[mcp.ListPromptsResult](),
		mcp.MethodPromptsGet:             reflect.TypeFor[mcp.GetPromptResult](),
		mcp.MethodCompletionComplete:     reflect.TypeFor[mcp.CompleteResult](),
		mcp.MethodLoggingSetLevel:        reflect.TypeFor[mcp.EmptyResult](),
		mcp.MethodSamplingCreateMessage:  reflect.TypeFor[mcp.CreateMessageResult](),
		mcp.MethodElicitationCreate:      reflect.TypeFor[mcp.ElicitResult](),
		mcp.MethodRootsList:              reflect.TypeFor[mcp.ListRootsResult](),
		mcp.MethodTasksGet:               reflect.TypeFor[mcp.GetTaskResult](),
		mcp.MethodTasksResult:            reflect.TypeFor[mcp.CallToolResult](),
		mcp.MethodTasksCancel:            reflect.TypeFor[mcp.CancelTaskResult](),
		mcp.MethodTasksList:              reflect.TypeFor[mcp.ListTasksResult](),
		mcp.MethodTasksUpdate:            reflect.TypeFor[mcp.EmptyResult](),
		mcp.MethodServerDiscover:         reflect.TypeFor[mcp.DiscoverResult](),
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
	case probe.Task != nil && method == mcp.MethodToolsCall:
		return reflect.TypeFor[mcp.CreateTaskResult]()
	case probe.TaskID != "" && method == mcp.MethodTasksGet && probe.ResultType != "":
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
