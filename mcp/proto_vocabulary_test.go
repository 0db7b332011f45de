package mcp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// vocabSchemas compiles definitions of the official MCP schemas on demand,
// once each. Every definition is compiled twice: as published, and
// "strict", with every object closed (unevaluatedProperties or
// additionalProperties false), so that a misspelt optional member is
// reported too. The official schemas leave objects open.
var vocabSchemas = struct {
	mu        sync.Mutex
	compilers map[string]*jsonschema.Compiler // by resource URL
	defsKey   map[string]string               // by resource URL
	compiled  map[string]*jsonschema.Schema   // by URL#pointer
}{compilers: map[string]*jsonschema.Compiler{}, defsKey: map[string]string{}, compiled: map[string]*jsonschema.Schema{}}

// vocabSchemaPath returns the schema of revision rev: the copy kept in the
// repository, else the shared specification next to the repository root
// (../shared/spec). Both are found from the repository root, so no test
// depends on where the checkout lives.
func vocabSchemaPath(t *testing.T, rev string) string {
	t.Helper()
	root := repoRoot(t)
	local := filepath.Join(root, "internal", "mcptest", "schema", rev, "schema.json")
	if _, err := os.Stat(local); err == nil {
		return local
	}
	return filepath.Join(root, "..", "shared", "spec", "schema", rev, "schema.json")
}

// repoRoot returns the directory of the go.mod above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// vocabSchema returns the compiled definition def (a name, or a path below
// the definitions such as "ElicitRequest/properties/params") of revision rev.
func vocabSchema(t *testing.T, rev, def string, strict bool) *jsonschema.Schema {
	t.Helper()
	vocabSchemas.mu.Lock()
	defer vocabSchemas.mu.Unlock()
	kind := "plain"
	if strict {
		kind = "strict"
	}
	url := "https://schemas.keel.invalid/vocabulary/" + rev + "/" + kind + ".json"
	c := vocabSchemas.compilers[url]
	if c == nil {
		raw, err := os.ReadFile(vocabSchemaPath(t, rev))
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		require.NoError(t, err)
		root := doc.(map[string]any)
		defsKey := "definitions"
		if _, ok := root["$defs"]; ok {
			defsKey = "$defs"
		}
		if strict {
			vocabStrictify(root, defsKey)
		}
		c = jsonschema.NewCompiler()
		c.AssertFormat()
		require.NoError(t, c.AddResource(url, doc))
		vocabSchemas.compilers[url], vocabSchemas.defsKey[url] = c, defsKey
	}
	loc := url + "#/" + vocabSchemas.defsKey[url] + "/" + def
	if sch := vocabSchemas.compiled[loc]; sch != nil {
		return sch
	}
	sch, err := c.Compile(loc)
	require.NoError(t, err, "compiling %s", loc)
	vocabSchemas.compiled[loc] = sch
	return sch
}

// Members whose value is arbitrary JSON (or an arbitrary JSON Schema):
// vocabStrictify leaves them open.
var vocabOpenMembers = map[string]bool{"_meta": true, "inputSchema": true, "outputSchema": true,
	"structuredContent": true, "input": true, "metadata": true, "data": true, "experimental": true}

// vocabStrictify closes every object schema of a schema document except
// the definitions that are allOf operands (their siblings add members).
func vocabStrictify(root map[string]any, defsKey string) {
	draft2020 := defsKey == "$defs"
	defs := root[defsKey].(map[string]any)
	operands := map[string]bool{}
	for _, d := range defs {
		for _, op := range vocabAsSlice(vocabAsMap(d)["allOf"]) {
			if ref, ok := vocabAsMap(op)["$ref"].(string); ok {
				operands[ref[strings.LastIndex(ref, "/")+1:]] = true
			}
		}
	}
	for name, d := range defs {
		vocabClose(vocabAsMap(d), draft2020, !operands[name])
	}
}

func vocabClose(s map[string]any, draft2020, close bool) {
	if s == nil {
		return
	}
	_, hasProps := s["properties"]
	_, hasRef := s["$ref"]
	_, hasAllOf := s["allOf"]
	_, hasAdditional := s["additionalProperties"]
	_, hasUneval := s["unevaluatedProperties"]
	if close && !hasAdditional && !hasUneval {
		switch {
		case draft2020 && (hasProps || hasRef || hasAllOf):
			s["unevaluatedProperties"] = false
		case !draft2020 && hasProps:
			s["additionalProperties"] = false
		}
	}
	for name, p := range vocabAsMap(s["properties"]) {
		if !vocabOpenMembers[name] {
			vocabClose(vocabAsMap(p), draft2020, true)
		}
	}
	for _, kw := range []string{"items", "additionalProperties"} {
		vocabClose(vocabAsMap(s[kw]), draft2020, true)
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		for _, a := range vocabAsSlice(s[kw]) {
			vocabClose(vocabAsMap(a), draft2020, kw != "allOf")
		}
	}
}

func vocabAsMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func vocabAsSlice(v any) []any        { s, _ := v.([]any); return s }

// vocabValidate fails t unless b is a valid instance of def in revision rev,
// both as published and with undeclared members rejected.
func vocabValidate(t *testing.T, rev, def string, b []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	if err := vocabSchema(t, rev, def, false).Validate(inst); err != nil {
		t.Errorf("%s is not a valid %s of %s:\n%v", b, def, rev, err)
		return
	}
	if err := vocabSchema(t, rev, def, true).Validate(inst); err != nil {
		t.Errorf("%s has members %s of %s does not declare:\n%v", b, def, rev, err)
	}
}

func vocabMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
	require.NoError(t, err)
	return b
}

// vocabCase is one type of the vocabulary: a populated value, the schema
// definition it must satisfy and, for a decode round trip, a function
// that unmarshals the JSON into a new value of the same type.
type vocabCase struct {
	name, rev, def string
	value          any
	decode         func([]byte) (any, error)
}

// vocabCaseOf builds a vocabCase for the 2025-11-25 definition def.
func vocabCaseOf[T any](def string, v T) vocabCase {
	return vocabCase{name: def, rev: mcp.Version20251125, def: def, value: v,
		decode: func(b []byte) (any, error) {
			var got T
			err := jsonv2.Unmarshal(b, &got)
			return got, err
		}}
}

// as names a case and optionally targets another revision.
func (c vocabCase) as(name, rev string) vocabCase {
	c.name = name
	if rev != "" {
		c.rev = rev
	}
	return c
}

func vocabPtr[T any](v T) *T { return &v }

var (
	vocabMeta  = mcp.Meta{"example.com/trace": "abc", mcp.MetaProgressToken: "p-1"}
	vocabAnn   = &mcp.Annotations{Audience: []string{"user", "assistant"}, Priority: vocabPtr(0.5), LastModified: "2025-01-12T15:00:58Z"}
	vocabIcons = []mcp.Icon{{Src: "https://example.com/icon.png", MimeType: "image/png", Sizes: []string{"48x48"}, Theme: "light"}}
	vocabTask  = mcp.Task{TaskID: "t-1", Status: mcp.TaskStatusWorking, StatusMessage: "indexing",
		CreatedAt: "2025-11-25T10:30:00Z", LastUpdatedAt: "2025-11-25T10:31:00Z", TTL: vocabPtr[int64](60000), PollInterval: vocabPtr[int64](500)}
	vocabTool = &mcp.Tool{Name: "get_weather", Description: "Weather for a city",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	vocabFormSchema = jsontext.Value(`{"type":"object","properties":{"name":{"type":"string","title":"Name"},"age":{"type":"integer","minimum":0}},"required":["name"]}`)
)

func vocabCases() []vocabCase {
	text := mcp.Content{Type: mcp.ContentText, Text: "hello", Annotations: vocabAnn, Meta: vocabMeta}
	image := mcp.Content{Type: mcp.ContentImage, Data: "iVBORw0KGgo=", MimeType: "image/png"}
	blob := "aGVsbG8="
	return []vocabCase{
		// resources
		vocabCaseOf("Resource", mcp.Resource{URI: "file:///project/README.md", Name: "README.md", Title: "Read me",
			Description: "The project's read-me", MimeType: "text/markdown", Size: vocabPtr[int64](1024),
			Annotations: vocabAnn, Icons: vocabIcons, Meta: vocabMeta}),
		vocabCaseOf("ResourceTemplate", mcp.ResourceTemplate{URITemplate: "file:///{path}", Name: "files", Title: "Files",
			Description: "Any file", MimeType: "application/octet-stream", Annotations: vocabAnn, Icons: vocabIcons, Meta: vocabMeta}),
		vocabCaseOf("ListResourcesResult", mcp.ListResourcesResult{Resources: []*mcp.Resource{{URI: "file:///a", Name: "a"}},
			NextCursor: "c2", Meta: vocabMeta}),
		vocabCaseOf("ListResourcesResult", mcp.ListResourcesResult{Resources: []*mcp.Resource{}}).as("ListResourcesResult/empty", ""),
		vocabCaseOf("ListResourceTemplatesResult", mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{{URITemplate: "db://tables/{table}", Name: "tables"}},
			NextCursor: "c2", Meta: vocabMeta}),
		vocabCaseOf("ReadResourceRequestParams", mcp.ReadResourceParams{URI: "file:///a", Meta: vocabMeta}),
		vocabCaseOf("ReadResourceResult", mcp.ReadResourceResult{Contents: []mcp.ResourceContents{
			{URI: "file:///a", MimeType: "text/plain", Text: vocabPtr(""), Meta: vocabMeta},
			{URI: "file:///b", MimeType: "image/png", Blob: &blob}}, Meta: vocabMeta}),
		vocabCaseOf("SubscribeRequestParams", mcp.SubscribeParams{URI: "file:///a", Meta: vocabMeta}),
		vocabCaseOf("UnsubscribeRequestParams", mcp.UnsubscribeParams{URI: "file:///a", Meta: vocabMeta}),
		vocabCaseOf("ResourceUpdatedNotificationParams", mcp.ResourceUpdatedNotificationParams{URI: "file:///a/b", Meta: vocabMeta}),

		// prompts
		vocabCaseOf("Prompt", mcp.Prompt{Name: "review", Title: "Code review", Description: "Reviews code",
			Arguments: []mcp.PromptArgument{{Name: "code", Title: "Code", Description: "The code", Required: true}, {Name: "style"}},
			Icons:     vocabIcons, Meta: vocabMeta}),
		vocabCaseOf("PromptArgument", mcp.PromptArgument{Name: "code", Title: "Code", Description: "The code", Required: true}),
		vocabCaseOf("PromptMessage", mcp.PromptMessage{Role: mcp.RoleUser, Content: text}),
		vocabCaseOf("PromptMessage", mcp.PromptMessage{Role: mcp.RoleAssistant, Content: mcp.Content{Type: mcp.ContentResource,
			Resource: &mcp.ResourceContents{URI: "file:///a", Text: vocabPtr("x")}}}).as("PromptMessage/resource", ""),
		vocabCaseOf("ListPromptsResult", mcp.ListPromptsResult{Prompts: []*mcp.Prompt{{Name: "review"}}, NextCursor: "n", Meta: vocabMeta}),
		vocabCaseOf("GetPromptRequestParams", mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"code": "x := 1"}, Meta: vocabMeta}),
		vocabCaseOf("GetPromptResult", mcp.GetPromptResult{Description: "A review", Messages: []mcp.PromptMessage{
			{Role: mcp.RoleUser, Content: mcp.Text("")}, {Role: mcp.RoleAssistant, Content: image}}, Meta: vocabMeta}),

		// completion
		vocabCaseOf("CompleteRequestParams", mcp.CompleteParams{Ref: mcp.CompleteReference{Type: mcp.RefPrompt, Name: "review", Title: "Review"},
			Argument: mcp.CompleteArgument{Name: "language", Value: "py"},
			Context:  &mcp.CompleteContext{Arguments: map[string]string{"framework": "flask"}}, Meta: vocabMeta}),
		vocabCaseOf("CompleteRequestParams", mcp.CompleteParams{Ref: mcp.CompleteReference{Type: mcp.RefResource, URI: "file:///{path}"},
			Argument: mcp.CompleteArgument{Name: "path", Value: ""}}).as("CompleteRequestParams/resource", ""),
		vocabCaseOf("PromptReference", mcp.CompleteReference{Type: mcp.RefPrompt, Name: "review"}),
		vocabCaseOf("ResourceTemplateReference", mcp.CompleteReference{Type: mcp.RefResource, URI: "file:///{path}"}),
		vocabCaseOf("CompleteResult", mcp.CompleteResult{Completion: mcp.Completion{Values: []string{"python", "pytorch"},
			Total: vocabPtr[int64](10), HasMore: true}, Meta: vocabMeta}),
		vocabCaseOf("CompleteResult", mcp.CompleteResult{Completion: mcp.Completion{Values: []string{}}}).as("CompleteResult/empty", ""),

		// logging
		vocabCaseOf("SetLevelRequestParams", mcp.SetLevelParams{Level: mcp.LoggingLevelWarning, Meta: vocabMeta}),
		vocabCaseOf("LoggingMessageNotificationParams", mcp.LoggingMessageNotificationParams{Level: mcp.LoggingLevelError,
			Logger: "db", Data: map[string]any{"error": "connection lost"}, Meta: vocabMeta}),
		vocabCaseOf("LoggingMessageNotificationParams", mcp.LoggingMessageNotificationParams{Level: mcp.LoggingLevelDebug, Data: "plain"}).
			as("LoggingMessageNotificationParams/string", ""),

		// sampling
		vocabCaseOf("SamplingMessageContentBlock", mcp.SamplingContent{Type: mcp.ContentText, Text: "hi", Annotations: vocabAnn, Meta: vocabMeta}),
		vocabCaseOf("SamplingMessageContentBlock", mcp.SamplingContent{Type: mcp.ContentAudio, Data: "UklGRg==", MimeType: "audio/wav"}).
			as("SamplingMessageContentBlock/audio", ""),
		vocabCaseOf("ToolUseContent", mcp.SamplingContent{Type: mcp.ContentToolUse, ID: "call_1", Name: "get_weather",
			Input: json.RawMessage(`{"city":"Paris"}`), Meta: vocabMeta}),
		vocabCaseOf("ToolResultContent", mcp.SamplingContent{Type: mcp.ContentToolResult, ToolUseID: "call_1",
			Content: []mcp.Content{mcp.Text("18°C")}, StructuredContent: json.RawMessage(`{"celsius":18}`),
			IsError: true, Meta: vocabMeta}),
		vocabCaseOf("SamplingMessage", mcp.SamplingMessage{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText("What's the weather?")}, Meta: vocabMeta}),
		vocabCaseOf("SamplingMessage", mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.SamplingMessageContent{
			mcp.SamplingText("Let me check."),
			{Type: mcp.ContentToolUse, ID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
		}}).as("SamplingMessage/array", ""),
		vocabCaseOf("CreateMessageRequestParams", mcp.CreateMessageParams{
			Messages: []mcp.SamplingMessage{
				{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText("Weather in Paris?")}},
				{Role: mcp.RoleAssistant, Content: mcp.SamplingMessageContent{{Type: mcp.ContentToolUse, ID: "c1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)}}},
				{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{{Type: mcp.ContentToolResult, ToolUseID: "c1", Content: []mcp.Content{mcp.Text("18°C")}}}},
			},
			ModelPreferences: &mcp.ModelPreferences{Hints: []mcp.ModelHint{{Name: "claude-3-sonnet"}, {}},
				CostPriority: vocabPtr(0.3), SpeedPriority: vocabPtr(0.8), IntelligencePriority: vocabPtr(0.5)},
			SystemPrompt: "You are helpful.", IncludeContext: mcp.IncludeContextNone, Temperature: vocabPtr(0.7),
			MaxTokens: 100, StopSequences: []string{"\n\n"}, Metadata: map[string]any{"provider": "x"},
			Tools: []*mcp.Tool{vocabTool}, ToolChoice: &mcp.ToolChoice{Mode: mcp.ToolChoiceAuto},
			Task: &mcp.TaskMetadata{TTL: vocabPtr[int64](60000)}, Meta: vocabMeta,
		}),
		vocabCaseOf("ModelPreferences", mcp.ModelPreferences{Hints: []mcp.ModelHint{{Name: "sonnet"}}, CostPriority: vocabPtr(0.0)}),
		vocabCaseOf("ToolChoice", mcp.ToolChoice{Mode: mcp.ToolChoiceRequired}),
		vocabCaseOf("CreateMessageResult", mcp.CreateMessageResult{Role: mcp.RoleAssistant,
			Content: mcp.SamplingMessageContent{mcp.SamplingText("It is 18°C.")}, Model: "claude-3-sonnet-20240307",
			StopReason: mcp.StopReasonEndTurn, Meta: vocabMeta}),
		vocabCaseOf("CreateMessageResult", mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m", StopReason: mcp.StopReasonToolUse,
			Content: mcp.SamplingMessageContent{{Type: mcp.ContentToolUse, ID: "a", Name: "x", Input: json.RawMessage(`{}`)},
				{Type: mcp.ContentToolUse, ID: "b", Name: "y", Input: json.RawMessage(`{"n":1}`)}}}).as("CreateMessageResult/tool_use", ""),

		// elicitation
		vocabCaseOf("ElicitRequestFormParams", mcp.ElicitParams{Mode: mcp.ElicitModeForm, Message: "Who are you?",
			RequestedSchema: json.RawMessage(vocabFormSchema), Task: &mcp.TaskMetadata{}, Meta: vocabMeta}),
		vocabCaseOf("ElicitRequestParams", mcp.ElicitParams{Message: "Who are you?", RequestedSchema: json.RawMessage(vocabFormSchema)}).
			as("ElicitRequestParams/form-without-mode", ""),
		vocabCaseOf("ElicitRequestURLParams", mcp.ElicitParams{Mode: mcp.ElicitModeURL, Message: "Sign in to continue",
			URL: "https://example.com/oauth/start?state=abc", ElicitationID: "e-1", Meta: vocabMeta}),
		vocabCaseOf("ElicitResult", mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{
			"name": "Ada", "age": 36.0, "subscribe": true, "tags": []any{"a", "b"}}, Meta: vocabMeta}),
		vocabCaseOf("ElicitResult", mcp.ElicitResult{Action: mcp.ElicitDecline}).as("ElicitResult/decline", ""),
		vocabCaseOf("ElicitationCompleteNotification/properties/params", mcp.ElicitationCompleteNotificationParams{ElicitationID: "e-1"}),
		vocabCaseOf("URLElicitationRequiredError/properties/error/allOf/1/properties/data", mcp.URLElicitationRequiredData{
			Elicitations: []mcp.ElicitParams{{Mode: mcp.ElicitModeURL, Message: "Authorize", URL: "https://example.com/auth", ElicitationID: "e-2"}}}),
		vocabCaseOf("ElicitRequestFormParams/properties/requestedSchema", mcp.ElicitationSchema{
			Schema: "https://json-schema.org/draft/2020-12/schema", Type: "object",
			Properties: map[string]mcp.PrimitiveSchema{
				"email": {Type: "string", Title: "E-mail", Description: "Your address", Format: "email",
					MinLength: vocabPtr[int64](3), MaxLength: vocabPtr[int64](80), Default: "a@example.com"},
				"age":   {Type: "integer", Minimum: vocabPtr(0.0), Maximum: vocabPtr(150.0), Default: 30.0},
				"agree": {Type: "boolean", Default: false},
				"color": {Type: "string", Enum: []string{"red", "green"}, Default: "red"},
				"size":  {Type: "string", OneOf: []mcp.EnumOption{{Const: "s", Title: "Small"}, {Const: "l", Title: "Large"}}},
				"tags":  {Type: "array", Items: &mcp.EnumItems{Type: "string", Enum: []string{"a", "b"}}, MinItems: vocabPtr[int64](1), MaxItems: vocabPtr[int64](2), Default: []any{"a"}},
				"roles": {Type: "array", Items: &mcp.EnumItems{AnyOf: []mcp.EnumOption{{Const: "r", Title: "Reader"}}}},
				"tier":  {Type: "string", Enum: []string{"f", "p"}, EnumNames: []string{"Free", "Pro"}},
			},
			Required: []string{"email"}}),
		vocabCaseOf("StringSchema", mcp.PrimitiveSchema{Type: "string", Format: "date", MinLength: vocabPtr[int64](0)}),
		vocabCaseOf("NumberSchema", mcp.PrimitiveSchema{Type: "number", Minimum: vocabPtr(-1.5), Default: 0.0}),
		vocabCaseOf("BooleanSchema", mcp.PrimitiveSchema{Type: "boolean", Title: "Agree", Default: true}),
		vocabCaseOf("UntitledSingleSelectEnumSchema", mcp.PrimitiveSchema{Type: "string", Enum: []string{"a"}}),
		vocabCaseOf("TitledSingleSelectEnumSchema", mcp.PrimitiveSchema{Type: "string", OneOf: []mcp.EnumOption{{Const: "a", Title: "A"}}}),
		vocabCaseOf("UntitledMultiSelectEnumSchema", mcp.PrimitiveSchema{Type: "array", Items: &mcp.EnumItems{Type: "string", Enum: []string{"a"}}}),
		vocabCaseOf("TitledMultiSelectEnumSchema", mcp.PrimitiveSchema{Type: "array", Items: &mcp.EnumItems{AnyOf: []mcp.EnumOption{{Const: "a", Title: "A"}}}}),
		vocabCaseOf("LegacyTitledEnumSchema", mcp.PrimitiveSchema{Type: "string", Enum: []string{"a"}, EnumNames: []string{"A"}}),

		// roots
		vocabCaseOf("Root", mcp.Root{URI: "file:///home/user/project", Name: "project", Meta: vocabMeta}),
		vocabCaseOf("ListRootsResult", mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///a"}}, Meta: vocabMeta}),

		// tasks
		vocabCaseOf("Task", vocabTask),
		vocabCaseOf("Task", mcp.Task{TaskID: "t-2", Status: mcp.TaskStatusCompleted, CreatedAt: "2025-11-25T10:30:00Z",
			LastUpdatedAt: "2025-11-25T10:30:00Z"}).as("Task/ttl-null", ""),
		vocabCaseOf("CreateTaskResult", mcp.CreateTaskResult{Task: vocabTask, Meta: vocabMeta}),
		vocabCaseOf("GetTaskRequest/properties/params", mcp.GetTaskParams{TaskID: "t-1"}),
		vocabCaseOf("GetTaskResult", mcp.GetTaskResult{Task: vocabTask, Meta: vocabMeta}),
		vocabCaseOf("GetTaskPayloadRequest/properties/params", mcp.GetTaskPayloadParams{TaskID: "t-1"}),
		vocabCaseOf("CancelTaskRequest/properties/params", mcp.CancelTaskParams{TaskID: "t-1"}),
		vocabCaseOf("CancelTaskResult", mcp.CancelTaskResult{Task: mcp.Task{TaskID: "t-1", Status: mcp.TaskStatusCancelled,
			StatusMessage: "cancelled by the client", CreatedAt: "2025-11-25T10:30:00Z", LastUpdatedAt: "2025-11-25T10:32:00Z"}}),
		vocabCaseOf("ListTasksResult", mcp.ListTasksResult{Tasks: []*mcp.Task{&vocabTask}, NextCursor: "n", Meta: vocabMeta}),
		vocabCaseOf("TaskStatusNotificationParams", mcp.TaskStatusNotificationParams{Task: mcp.Task{TaskID: "t-1",
			Status: mcp.TaskStatusInputRequired, CreatedAt: "2025-11-25T10:30:00Z", LastUpdatedAt: "2025-11-25T10:31:00Z",
			TTL: vocabPtr[int64](0)}, Meta: vocabMeta}),
		vocabCaseOf("RelatedTaskMetadata", mcp.RelatedTaskMetadata{TaskID: "t-1"}),

		// progress and other notifications
		vocabCaseOf("ProgressNotificationParams", mcp.ProgressParams{ProgressToken: json.RawMessage(`"tok-1"`), Progress: 50,
			Total: vocabPtr(100.0), Message: "half way", Meta: vocabMeta}),
		vocabCaseOf("ProgressNotificationParams", mcp.ProgressParams{ProgressToken: json.RawMessage(`7`), Progress: 0}).
			as("ProgressNotificationParams/integer-token", ""),
		vocabCaseOf("NotificationParams", mcp.NotificationParams{Meta: vocabMeta}),
		vocabCaseOf("RequestParams", mcp.RequestParams{Meta: vocabMeta}),

		// the same wire forms in older revisions
		vocabCaseOf("SamplingMessage", mcp.SamplingMessage{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText("hi")}}).
			as("2024-11-05/SamplingMessage", mcp.Version20241105),
		vocabCaseOf("CreateMessageResult", mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: "m",
			Content: mcp.SamplingMessageContent{mcp.SamplingText("ok")}, StopReason: mcp.StopReasonMaxTokens}).
			as("2025-06-18/CreateMessageResult", mcp.Version20250618),
		vocabCaseOf("ElicitRequest/properties/params", mcp.ElicitParams{Message: "Who?", RequestedSchema: json.RawMessage(vocabFormSchema)}).
			as("2025-06-18/ElicitRequest", mcp.Version20250618),
		vocabCaseOf("ResourceReference", mcp.CompleteReference{Type: mcp.RefResource, URI: "file:///{path}"}).
			as("2025-03-26/ResourceReference", mcp.Version20250326),
		vocabCaseOf("ProgressNotification/properties/params", mcp.ProgressParams{ProgressToken: json.RawMessage(`7`), Progress: 1, Total: vocabPtr(2.0)}).
			as("2024-11-05/ProgressNotification", mcp.Version20241105),
	}
}

// TestVocabularySchema marshals a populated value of every vocabulary
// type, validates it against its definition in the official schema, and
// decodes it back to an equal value.
func TestVocabularySchema(t *testing.T) {
	for _, c := range vocabCases() {
		t.Run(c.name, func(t *testing.T) {
			b := vocabMarshal(t, c.value)
			vocabValidate(t, c.rev, c.def, b)
			got, err := c.decode(b)
			require.NoError(t, err, "decoding %s", b)
			assert.Equal(t, c.value, got, "round trip of %s", b)
		})
	}
}

// TestVocabularyWireForm pins the exact JSON of values whose wire form is
// easy to get wrong: empty-but-present objects must be written as {},
// required members must be written even when zero, and nullable members
// as null.
func TestVocabularyWireForm(t *testing.T) {
	tests := []struct {
		name  string
		value any
		want  string
		def   string // 2025-11-25 definition the JSON must satisfy ("" = none)
	}{
		{"empty server capabilities", &mcp.ServerCapabilities{Logging: &struct{}{}, Completions: &struct{}{},
			Prompts: &mcp.ListChangedCapability{}, Resources: &mcp.ResourcesCapability{}, Tools: &mcp.ListChangedCapability{},
			Tasks: &mcp.ServerTasksCapability{List: &struct{}{}, Cancel: &struct{}{}, Requests: &mcp.TaskRequestsCapability{}}},
			`{"logging":{},"completions":{},"prompts":{},"resources":{},"tools":{},"tasks":{"list":{},"cancel":{},"requests":{}}}`,
			"ServerCapabilities"},
		{"empty client capabilities", &mcp.ClientCapabilities{Roots: &mcp.RootsCapability{}, Sampling: &mcp.SamplingCapability{},
			Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}}, Tasks: &mcp.ClientTasksCapability{}},
			`{"roots":{},"sampling":{},"elicitation":{"form":{}},"tasks":{}}`, "ClientCapabilities"},
		{"empty sampling members", &mcp.CreateMessageParams{ModelPreferences: &mcp.ModelPreferences{Hints: []mcp.ModelHint{{}}},
			ToolChoice: &mcp.ToolChoice{}, Task: &mcp.TaskMetadata{}},
			`{"messages":[],"modelPreferences":{"hints":[{}]},"maxTokens":0,"toolChoice":{},"task":{}}`, "CreateMessageRequestParams"},
		{"empty completion context", &mcp.CompleteParams{Ref: mcp.CompleteReference{Type: mcp.RefPrompt},
			Context: &mcp.CompleteContext{}},
			`{"ref":{"type":"ref/prompt","name":""},"argument":{"name":"","value":""},"context":{}}`, "CompleteRequestParams"},
		{"nil completion values", &mcp.CompleteResult{}, `{"completion":{"values":[]}}`, "CompleteResult"},
		{"nil lists", &mcp.ListResourcesResult{}, `{"resources":[]}`, "ListResourcesResult"},
		{"nil templates", &mcp.ListResourceTemplatesResult{}, `{"resourceTemplates":[]}`, "ListResourceTemplatesResult"},
		{"nil prompts", &mcp.ListPromptsResult{}, `{"prompts":[]}`, "ListPromptsResult"},
		{"nil messages", &mcp.GetPromptResult{}, `{"messages":[]}`, "GetPromptResult"},
		{"nil contents", &mcp.ReadResourceResult{}, `{"contents":[]}`, "ReadResourceResult"},
		{"nil roots", &mcp.ListRootsResult{}, `{"roots":[]}`, "ListRootsResult"},
		{"nil tasks", &mcp.ListTasksResult{}, `{"tasks":[]}`, "ListTasksResult"},
		{"empty text prompt message", &mcp.PromptMessage{Role: mcp.RoleUser, Content: mcp.Text("")},
			`{"role":"user","content":{"type":"text","text":""}}`, "PromptMessage"},
		{"zero progress", &mcp.ProgressParams{ProgressToken: json.RawMessage(`0`)},
			`{"progressToken":0,"progress":0}`, "ProgressNotificationParams"},
		{"null log data", &mcp.LoggingMessageNotificationParams{Level: mcp.LoggingLevelInfo},
			`{"level":"info","data":null}`, "LoggingMessageNotificationParams"},
		{"unlimited ttl", &mcp.Task{TaskID: "t", Status: mcp.TaskStatusWorking, CreatedAt: "c", LastUpdatedAt: "u"},
			`{"taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttl":null}`, "Task"},
		{"zero ttl", &mcp.Task{TaskID: "t", Status: mcp.TaskStatusFailed, CreatedAt: "c", LastUpdatedAt: "u", TTL: vocabPtr[int64](0), PollInterval: vocabPtr[int64](0)},
			`{"taskId":"t","status":"failed","createdAt":"c","lastUpdatedAt":"u","ttl":0,"pollInterval":0}`, "Task"},
		{"task result inlines the task", &mcp.GetTaskResult{Task: mcp.Task{TaskID: "t", Status: mcp.TaskStatusWorking, CreatedAt: "c", LastUpdatedAt: "u"},
			Meta: mcp.Meta{"k": "v"}},
			`{"taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttl":null,"_meta":{"k":"v"}}`, "GetTaskResult"},
		{"empty task metadata", &mcp.CallToolParams{Name: "x", Task: &mcp.TaskMetadata{}}, `{"name":"x","task":{}}`, "CallToolRequestParams"},
		{"tool_use without input", &mcp.SamplingContent{Type: mcp.ContentToolUse, ID: "i", Name: "n"},
			`{"type":"tool_use","id":"i","name":"n","input":{}}`, "ToolUseContent"},
		{"tool_result without content", &mcp.SamplingContent{Type: mcp.ContentToolResult, ToolUseID: "i"},
			`{"type":"tool_result","toolUseId":"i","content":[]}`, "ToolResultContent"},
		{"one sampling block is an object", &mcp.SamplingMessage{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText("")}},
			`{"role":"user","content":{"type":"text","text":""}}`, "SamplingMessage"},
		{"nil sampling content is an array", &mcp.SamplingMessage{Role: mcp.RoleUser},
			`{"role":"user","content":[]}`, "SamplingMessage"},
		{"form without mode or schema", &mcp.ElicitParams{Message: ""},
			`{"message":"","requestedSchema":{"type":"object","properties":{}}}`, "ElicitRequestFormParams"},
		{"url elicitation", &mcp.ElicitParams{Mode: mcp.ElicitModeURL, Message: "m", URL: "https://x.example", ElicitationID: "e"},
			`{"mode":"url","message":"m","url":"https://x.example","elicitationId":"e"}`, "ElicitRequestURLParams"},
		{"empty elicitation schema", &mcp.ElicitationSchema{Type: "object"}, `{"type":"object","properties":{}}`,
			"ElicitRequestFormParams/properties/requestedSchema"},
		{"false default", &mcp.PrimitiveSchema{Type: "boolean", Default: false}, `{"type":"boolean","default":false}`, "BooleanSchema"},
		{"resource reference", &mcp.CompleteReference{Type: mcp.RefResource, URI: "u://x/{x}", Name: "ignored"},
			`{"type":"ref/resource","uri":"u://x/{x}"}`, "ResourceTemplateReference"},
		{"empty params", &mcp.NotificationParams{}, `{}`, "NotificationParams"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := vocabMarshal(t, tt.value)
			assert.JSONEq(t, tt.want, string(b))
			assert.Equal(t, tt.want, string(b), "member order")
			if tt.def != "" {
				vocabValidate(t, mcp.Version20251125, tt.def, b)
			}
		})
	}
}

// TestVocabularyDecodeErrors checks that the union types reject JSON that
// lacks a member its type requires, or has an unknown type.
func TestVocabularyDecodeErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
		into             func() any
	}{
		{"prompt ref without name", `{"type":"ref/prompt"}`, `"name"`, func() any { return new(mcp.CompleteReference) }},
		{"resource ref without uri", `{"type":"ref/resource","name":"x"}`, `"uri"`, func() any { return new(mcp.CompleteReference) }},
		{"unknown ref", `{"type":"ref/tool","name":"x"}`, "ref/tool", func() any { return new(mcp.CompleteReference) }},
		{"tool_use without input", `{"type":"tool_use","id":"a","name":"b"}`, `"input"`, func() any { return new(mcp.SamplingContent) }},
		{"tool_use without id", `{"type":"tool_use","name":"b","input":{}}`, `"id"`, func() any { return new(mcp.SamplingContent) }},
		{"tool_result without content", `{"type":"tool_result","toolUseId":"a"}`, `"content"`, func() any { return new(mcp.SamplingContent) }},
		{"tool_result without toolUseId", `{"type":"tool_result","content":[]}`, `"toolUseId"`, func() any { return new(mcp.SamplingContent) }},
		{"text without text", `{"type":"text"}`, `"text"`, func() any { return new(mcp.SamplingContent) }},
		{"image without mimeType", `{"type":"image","data":""}`, `"mimeType"`, func() any { return new(mcp.SamplingContent) }},
		{"resource_link in sampling", `{"type":"resource_link","uri":"a","name":"b"}`, "not allowed", func() any { return new(mcp.SamplingContent) }},
		{"bad block in array", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text"}]}`, `"text"`, func() any { return new(mcp.SamplingMessage) }},
		{"null sampling content", `{"role":"user","content":null}`, "null", func() any { return new(mcp.SamplingMessage) }},
		{"form without schema", `{"message":"m"}`, `"requestedSchema"`, func() any { return new(mcp.ElicitParams) }},
		{"elicitation without message", `{"mode":"url","url":"u","elicitationId":"e"}`, `"message"`, func() any { return new(mcp.ElicitParams) }},
		{"url without url", `{"mode":"url","message":"m","elicitationId":"e"}`, `"url"`, func() any { return new(mcp.ElicitParams) }},
		{"url without id", `{"mode":"url","message":"m","url":"u"}`, `"elicitationId"`, func() any { return new(mcp.ElicitParams) }},
		{"unknown mode", `{"mode":"voice","message":"m"}`, "voice", func() any { return new(mcp.ElicitParams) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := jsonv2.Unmarshal([]byte(tt.json), tt.into())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}

	for _, v := range []any{mcp.CompleteReference{Type: "ref/x"}, mcp.SamplingContent{Type: mcp.ContentResource},
		mcp.ElicitParams{Mode: "voice"}} {
		_, err := jsonv2.Marshal(v)
		assert.Error(t, err, "marshalling %#v", v)
	}
}

// TestVocabularySamplingContentForms checks that sampling message content
// is read both as a single block and as an array.
func TestVocabularySamplingContentForms(t *testing.T) {
	var single, array mcp.SamplingMessage
	require.NoError(t, jsonv2.Unmarshal([]byte(`{"role":"user","content":{"type":"text","text":"a"}}`), &single))
	require.NoError(t, jsonv2.Unmarshal([]byte(`{"role":"user","content":[{"type":"text","text":"a"}]}`), &array))
	assert.Equal(t, single, array)
	assert.Equal(t, mcp.SamplingMessageContent{mcp.SamplingText("a")}, single.Content)

	var empty mcp.SamplingMessage
	require.NoError(t, jsonv2.Unmarshal([]byte(`{"role":"user","content":[]}`), &empty))
	assert.NotNil(t, empty.Content)
	assert.Empty(t, empty.Content)
}

func TestVocabularyLoggingLevel(t *testing.T) {
	order := []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice, mcp.LoggingLevelWarning,
		mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency}
	for i, l := range order {
		assert.True(t, l.Valid(), l)
		assert.Equal(t, 7-i, mcp.SeverityForTest(l), l)
		for j, min := range order {
			assert.Equal(t, i >= j, l.AtLeast(min), "%s.AtLeast(%s)", l, min)
		}
		vocabValidate(t, mcp.Version20251125, "LoggingLevel", vocabMarshal(t, l))
		if l != mcp.LoggingLevelNotice {
			assert.Equal(t, l, mcp.LoggingLevelForSlog(l.SlogLevel()), "slog round trip of %s", l)
		}
	}
	assert.Equal(t, mcp.LoggingLevelInfo, mcp.LoggingLevelForSlog(mcp.LoggingLevelNotice.SlogLevel()))
	for _, bad := range []mcp.LoggingLevel{"", "verbose", "WARNING"} {
		assert.False(t, bad.Valid(), bad)
		assert.Equal(t, -1, mcp.SeverityForTest(bad), bad)
		assert.False(t, bad.AtLeast(mcp.LoggingLevelDebug), bad)
		assert.False(t, mcp.LoggingLevelEmergency.AtLeast(bad), bad)
	}
}

func TestVocabularyTaskStatus(t *testing.T) {
	for s, terminal := range map[mcp.TaskStatus]bool{mcp.TaskStatusWorking: false, mcp.TaskStatusInputRequired: false,
		mcp.TaskStatusCompleted: true, mcp.TaskStatusFailed: true, mcp.TaskStatusCancelled: true} {
		assert.Equal(t, terminal, s.Terminal(), s)
		vocabValidate(t, mcp.Version20251125, "TaskStatus", vocabMarshal(t, s))
	}
	for _, r := range []mcp.Role{mcp.RoleUser, mcp.RoleAssistant} {
		vocabValidate(t, mcp.Version20251125, "Role", vocabMarshal(t, r))
	}
}

// TestVocabularyURLElicitationError checks the -32042 error built by
// NewURLElicitationRequiredError against URLElicitationRequiredError.
func TestVocabularyURLElicitationError(t *testing.T) {
	e := mcp.NewURLElicitationRequiredError("This request requires authorization.",
		mcp.ElicitParams{Message: "Authorize access", URL: "https://example.com/connect", ElicitationID: "e-1"})
	assert.Equal(t, int64(mcp.CodeURLElicitation), e.Code)
	envelope := struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      int            `json:"id"`
		Error   map[string]any `json:"error"`
	}{"2.0", 1, map[string]any{"code": e.Code, "message": e.Message, "data": e.Data}}
	b := vocabMarshal(t, envelope)
	vocabValidate(t, mcp.Version20251125, "URLElicitationRequiredError", b)
	assert.Contains(t, string(b), `"mode":"url"`)
}

// TestVocabularyValidatorIsStrict checks the test's own validator: the
// strict schemas reject members a definition does not declare, at any
// depth, while leaving open members (_meta, input, ...) open.
func TestVocabularyValidatorIsStrict(t *testing.T) {
	valid := func(def, doc string, strict bool) bool {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		require.NoError(t, err)
		return vocabSchema(t, mcp.Version20251125, def, strict).Validate(inst) == nil
	}
	for _, tt := range []struct{ def, doc string }{
		{"Resource", `{"uri":"file:///a","name":"a","titel":"x"}`},
		{"CreateMessageResult", `{"role":"user","model":"m","content":[{"type":"text","text":"a","extra":1}]}`},
	} {
		assert.True(t, valid(tt.def, tt.doc, false), "plain %s accepts %s", tt.def, tt.doc)
		assert.False(t, valid(tt.def, tt.doc, true), "strict %s rejects %s", tt.def, tt.doc)
	}
	assert.True(t, valid("ToolUseContent", `{"type":"tool_use","id":"a","name":"b","input":{"any":1},"_meta":{"x":1}}`, true))
}
