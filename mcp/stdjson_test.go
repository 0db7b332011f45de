package mcp_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/stdjsontest"
	"github.com/keelmcp/keel/mcp"
)

// stdJSONTypes holds the zero value of every exported mcp type with a JSON
// form; TestStandardJSONCoversEveryType keeps it complete.
var stdJSONTypes = []any{
	mcp.Annotations{},
	mcp.CallToolParams{},
	mcp.CallToolResult{},
	mcp.CancelTaskResult{},
	mcp.Change{},
	mcp.ClientCapabilities{},
	mcp.ClientTaskRequestsCapability{},
	mcp.ClientTasksCapability{},
	mcp.CompleteArgument{},
	mcp.CompleteContext{},
	mcp.CompleteParams{},
	mcp.CompleteReference{},
	mcp.CompleteResult{},
	mcp.Completion{},
	mcp.Content{},
	mcp.CreateMessageParams{},
	mcp.CreateMessageResult{},
	mcp.CreateTaskResult{},
	mcp.DetailedTask{},
	mcp.DiscoverResult{},
	mcp.ElicitParams{},
	mcp.ElicitResult{},
	mcp.ElicitationCapability{},
	mcp.ElicitationSchema{},
	mcp.EnumItems{},
	mcp.EnumOption{},
	mcp.GetPromptParams{},
	mcp.GetPromptResult{},
	mcp.GetTaskResult{},
	mcp.Icon{},
	mcp.Implementation{},
	mcp.InitializeResult{},
	mcp.InputRequest{},
	mcp.ListChangedCapability{},
	mcp.ListPromptsResult{},
	mcp.ListResourceTemplatesResult{},
	mcp.ListResourcesResult{},
	mcp.ListRootsResult{},
	mcp.ListTasksResult{},
	mcp.ListToolsResult{},
	mcp.LoggingMessageNotificationParams{},
	mcp.ModelHint{},
	mcp.ModelPreferences{},
	mcp.PrimitiveSchema{},
	mcp.ProgressParams{},
	mcp.Prompt{},
	mcp.PromptArgument{},
	mcp.PromptMessage{},
	mcp.ReadResourceParams{},
	mcp.ReadResourceResult{},
	mcp.Resource{},
	mcp.ResourceContents{},
	mcp.ResourceTemplate{},
	mcp.ResourcesCapability{},
	mcp.Root{},
	mcp.RootsCapability{},
	mcp.SamplingCapability{},
	mcp.SamplingContent{},
	mcp.SamplingMessage{},
	mcp.SamplingMessageContent(nil),
	mcp.ServerCapabilities{},
	mcp.ServerTasksCapability{},
	mcp.StructuredError{},
	mcp.SubscriptionFilter{},
	mcp.Task{},
	mcp.TaskCreatedResult{},
	mcp.TaskError{},
	mcp.TaskInfo{},
	mcp.TaskMetadata{},
	mcp.TaskRequestsCapability{},
	mcp.TaskStatusNotificationParams{},
	mcp.Tool{},
	mcp.ToolAnnotations{},
	mcp.ToolChoice{},
	mcp.ToolExecution{},
	mcp.ToolTaskRequests{},
	mcp.UnsupportedVersionData{},
}

// stdJSONOverrides are the values the filler uses for types whose fields
// must agree with each other (a block's members with its type).
var stdJSONOverrides = map[reflect.Type]any{
	reflect.TypeFor[mcp.Content](): mcp.Content{Type: mcp.ContentResourceLink, URI: "file:///a<b>", Name: "a&b",
		Title: "T", Description: "D", MimeType: "text/plain", Size: new(int64), Icons: []mcp.Icon{{Src: "https://x/i.png"}},
		Annotations: &mcp.Annotations{Audience: []string{"user"}}, Meta: mcp.Meta{"k": "v"}},
	reflect.TypeFor[mcp.CompleteReference](): mcp.CompleteReference{Type: mcp.RefPrompt, Name: "p", Title: "P"},
	reflect.TypeFor[mcp.SamplingContent]():   mcp.SamplingText("hi <there>"),
	reflect.TypeFor[mcp.ElicitParams](): mcp.ElicitParams{Mode: mcp.ElicitModeForm, Message: "m",
		RequestedSchema: []byte(`{"type":"object","properties":{"n":{"type":"string"}}}`), Meta: mcp.Meta{"k": 1.5}},
}

// TestStandardJSONTypes encodes every exported type, as its zero value and
// with every field set, with encoding/json and with keel's codec, and
// requires the same bytes and the same decoded values.
func TestStandardJSONTypes(t *testing.T) { stdjsontest.CheckAll(t, stdJSONTypes, stdJSONOverrides) }

// TestStandardJSONVocabulary runs the same comparison over the schema
// vocabulary's values: one realistic value of every protocol shape, each
// valid against the official schema.
func TestStandardJSONVocabulary(t *testing.T) {
	for _, c := range vocabCases() {
		t.Run(c.name, func(t *testing.T) {
			stdjsontest.Check(t, c.value)
		})
	}
}

// TestStandardJSONCoversEveryType requires stdJSONTypes to list every
// exported type of the package that has a JSON form.
func TestStandardJSONCoversEveryType(t *testing.T) { stdjsontest.RequireCovers(t, ".", stdJSONTypes) }

// TestStandardJSONDecodesStrictly feeds encoding/json the inputs keel's
// codec refuses or reads differently from a case-insensitive decoder: both
// must refuse the same inputs and read the others to the same value, so a
// check written with encoding/json cannot be smuggled past.
func TestStandardJSONDecodesStrictly(t *testing.T) {
	cases := []struct {
		name    string
		typ     reflect.Type
		in      string
		refused bool
	}{
		{"duplicate member", reflect.TypeFor[mcp.CallToolParams](), `{"name":"a","name":"b"}`, true},
		{"duplicate member in _meta", reflect.TypeFor[mcp.CallToolParams](), `{"name":"a","_meta":{"k":1,"k":2}}`, true},
		{"duplicate member in a content block", reflect.TypeFor[mcp.CallToolResult](), `{"content":[{"type":"text","text":"a","text":"b"}]}`, true},
		{"invalid UTF-8", reflect.TypeFor[mcp.Tool](), "{\"name\":\"\xff\",\"inputSchema\":{}}", true},
		{"member name in another case", reflect.TypeFor[mcp.ReadResourceParams](), `{"uri":"file:///ok","URI":"file:///etc/passwd"}`, false},
		{"only a member name in another case", reflect.TypeFor[mcp.GetPromptParams](), `{"Name":"admin"}`, false},
		{"content block without its text", reflect.TypeFor[mcp.Content](), `{"type":"text"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			viaKeel, viaStd := reflect.New(tc.typ), reflect.New(tc.typ)
			keelErr := jsonrpc.Unmarshal([]byte(tc.in), viaKeel.Interface())
			stdErr := json.Unmarshal([]byte(tc.in), viaStd.Interface())
			if tc.refused {
				require.Error(t, keelErr)
				require.Error(t, stdErr, "encoding/json must refuse what keel refuses")
				return
			}
			require.NoError(t, keelErr)
			require.NoError(t, stdErr)
			assert.Equal(t, viaKeel.Elem().Interface(), viaStd.Elem().Interface())
		})
	}
}
