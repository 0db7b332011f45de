package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// objectSchema is the smallest valid input schema.
const objectSchema = `{"type":"object"}`

func okHandler(text string) registry.ToolHandler {
	return func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
		return mcp.TextResult(text), nil
	}
}

func rawTool(name, schema string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: "test tool", InputSchema: json.RawMessage(schema)}
}

func newCall(name, args string) *mcp.ToolCall {
	return &mcp.ToolCall{Name: name, Arguments: json.RawMessage(args), CorrelationID: "corr-1", RunID: "run-1"}
}

// requireRegistrationError checks that err is a registration error naming
// the tool that unwraps to INVALID_ARGUMENT, and that it mentions want.
func requireRegistrationError(t *testing.T, err error, tool, want string) {
	t.Helper()
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", tool), "the error names the tool")
	assert.Contains(t, err.Error(), want)
	var re *registry.RegistrationError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, tool, re.Tool)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
}

func TestToolNameRules(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"get_weather", true},
		{"Tool-1.v2", true},
		{"ALL_CAPS.and-dashes_09", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"has space", false},
		{"comma,name", false},
		{"slash/name", false},
		{"colon:name", false},
		{"tab\tname", false},
		{"émoji", false},
		{"at@sign", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.name), func(t *testing.T) {
			err := registry.CheckToolName(tt.name)
			r := registry.New(nil)
			addErr := r.AddTool(rawTool(tt.name, objectSchema), okHandler("x"), nil)
			regErr := registry.Register(registry.New(nil), tt.name, "", func(context.Context, struct{}) (string, error) { return "", nil }, nil)
			if tt.ok {
				require.NoError(t, err)
				require.NoError(t, addErr)
				require.NoError(t, regErr)
				return
			}
			requireRegistrationError(t, err, tt.name, "tool name")
			requireRegistrationError(t, addErr, tt.name, "tool name")
			requireRegistrationError(t, regErr, tt.name, "tool name")
			assert.Zero(t, r.Len())
		})
	}
}

func TestObjectRootRule(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"string root", `{"type":"string"}`, `"type": "object"`},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, `"type": "object"`},
		{"type array", `{"type":["object","null"]}`, `"type": "object"`},
		{"ref root", `{"$ref":"#/$defs/x","$defs":{"x":{"type":"object"}}}`, `"type": "object"`},
		{"boolean schema", `true`, "JSON object"},
		{"array", `[]`, "JSON object"},
		{"missing", ``, "missing"},
		{"not JSON", `{"type":`, "not valid JSON"},
		{"duplicate member", `{"type":"object","type":"object"}`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := registry.New(nil)
			err := r.AddTool(rawTool("t1", tt.schema), okHandler("x"), nil)
			requireRegistrationError(t, err, "t1", tt.want)
			assert.Contains(t, err.Error(), "inputSchema")

			def := rawTool("t2", objectSchema)
			def.OutputSchema = json.RawMessage(tt.schema)
			if tt.schema == "" {
				return // an empty output schema means "none"
			}
			err = r.AddTool(def, okHandler("x"), nil)
			requireRegistrationError(t, err, "t2", tt.want)
			assert.Contains(t, err.Error(), "outputSchema")
		})
	}

	t.Run("typed input", func(t *testing.T) {
		r := registry.New(nil)
		err := registry.Register(r, "s", "", func(context.Context, string) (string, error) { return "", nil }, nil)
		requireRegistrationError(t, err, "s", "input type string")
		err = registry.Register(r, "sl", "", func(context.Context, []int) (string, error) { return "", nil }, nil)
		requireRegistrationError(t, err, "sl", `"type": "object"`)
		err = registry.Register(r, "ch", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil }, nil)
		requireRegistrationError(t, err, "ch", "cannot derive")
	})
	t.Run("typed output", func(t *testing.T) {
		r := registry.New(nil)
		err := registry.Register(r, "o", "", func(context.Context, struct{}) ([]int, error) { return nil, nil }, nil)
		requireRegistrationError(t, err, "o", "output type []int")
		err = registry.Register(r, "i", "", func(context.Context, struct{}) (int, error) { return 0, nil }, nil)
		requireRegistrationError(t, err, "i", "output type int")
	})
}

func TestRegisterValidSchemasAreCompacted(t *testing.T) {
	r := registry.New(nil)
	require.NoError(t, r.AddTool(rawTool("spaced", "{ \"type\" : \"object\",\n \"properties\": {} }"), okHandler("x"), nil))
	tool, ok := r.Lookup("spaced")
	require.True(t, ok)
	assert.Equal(t, `{"type":"object","properties":{}}`, string(tool.Definition().InputSchema))
}

func TestDuplicateRegistration(t *testing.T) {
	r := registry.New(nil)
	var changes atomic.Int32
	r.OnChange(func() { changes.Add(1) })

	require.NoError(t, r.AddTool(rawTool("dup", objectSchema), okHandler("first"), nil))
	require.Equal(t, int32(1), changes.Load())

	t.Run("identical definition with another handler is an error", func(t *testing.T) {
		err := r.AddTool(rawTool("dup", objectSchema), okHandler("second"), nil)
		requireRegistrationError(t, err, "dup", "already registered")
		assert.ErrorIs(t, err, registry.ErrDuplicateTool)
		// The same definition written differently is refused the same way.
		assert.ErrorIs(t, r.AddTool(rawTool("dup", `{ "type": "object" }`), okHandler("third"), nil), registry.ErrDuplicateTool)
		assert.Equal(t, int32(1), changes.Load(), "no change notification")
		res, err := r.CallTool(context.Background(), newCall("dup", `{}`))
		require.NoError(t, err)
		assert.Equal(t, "first", res.Content[0].Text)
	})

	differing := []struct {
		name string
		def  *mcp.Tool
		opts *registry.ToolOptions
	}{
		{"description", &mcp.Tool{Name: "dup", Description: "other", InputSchema: json.RawMessage(objectSchema)}, nil},
		{"schema", rawTool("dup", `{"type":"object","required":["a"]}`), nil},
		{"title", rawTool("dup", objectSchema), &registry.ToolOptions{Title: "Dup"}},
		{"timeout", rawTool("dup", objectSchema), &registry.ToolOptions{Timeout: time.Second}},
		{"serial", rawTool("dup", objectSchema), &registry.ToolOptions{Serial: true}},
	}
	for _, tt := range differing {
		t.Run("different "+tt.name, func(t *testing.T) {
			err := r.AddTool(tt.def, okHandler("other"), tt.opts)
			requireRegistrationError(t, err, "dup", "already registered")
			assert.ErrorIs(t, err, registry.ErrDuplicateTool)
		})
	}
	assert.Equal(t, int32(1), changes.Load())

	t.Run("typed", func(t *testing.T) {
		type in struct {
			A string `json:"a"`
		}
		h := func(context.Context, in) (string, error) { return "typed", nil }
		require.NoError(t, registry.Register(r, "typed", "d", h, &registry.ToolOptions{Module: "m"}))
		require.ErrorIs(t, registry.Register(r, "typed", "d", h, &registry.ToolOptions{Module: "m"}), registry.ErrDuplicateTool,
			"even the same handler: handlers cannot be compared")
		err := registry.Register(r, "typed", "d", func(context.Context, in) (struct{ B int }, error) { return struct{ B int }{}, nil }, &registry.ToolOptions{Module: "m"})
		assert.ErrorIs(t, err, registry.ErrDuplicateTool)
		err = registry.Register(r, "typed", "d", h, &registry.ToolOptions{Module: "other"})
		assert.ErrorIs(t, err, registry.ErrDuplicateTool)
		assert.Equal(t, int32(2), changes.Load())
	})
}

func TestToolMetadata(t *testing.T) {
	r := registry.New(nil)
	def := &mcp.Tool{
		Name:        "wipe",
		Description: "Wipes things.",
		InputSchema: json.RawMessage(objectSchema),
		Meta:        mcp.Meta{"com.example/owner": "ops"},
	}
	opts := &registry.ToolOptions{
		Title:        "Wipe",
		Annotations:  &mcp.ToolAnnotations{IdempotentHint: new(bool)},
		Icons:        []mcp.Icon{{Src: "https://example.com/wipe.png", MimeType: "image/png", Sizes: []string{"48x48"}}},
		Meta:         mcp.Meta{"com.example/tier": "gold"},
		Destructive:  true,
		DeprecatedIn: "1.4.0",
		Module:       "admin",
		Timeout:      3 * time.Second,
		Serial:       true,
		TaskSupport:  mcp.TaskOptional,
	}
	require.NoError(t, r.AddTool(def, okHandler("x"), opts))
	assert.Nil(t, def.Annotations, "the caller's definition is not modified")
	assert.Equal(t, mcp.Meta{"com.example/owner": "ops"}, def.Meta)

	// Changing the caller's options afterwards changes nothing.
	opts.Icons[0].Sizes[0] = "changed"
	opts.Meta["com.example/tier"] = "changed"
	*opts.Annotations.IdempotentHint = true

	tool, ok := r.Lookup("wipe")
	require.True(t, ok)
	got, err := jsonv2.Marshal(tool.Definition(), jsonv2.Deterministic(true))
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"name": "wipe",
		"title": "Wipe",
		"description": "Wipes things.",
		"inputSchema": {"type": "object"},
		"annotations": {"idempotentHint": false, "destructiveHint": true},
		"icons": [{"src": "https://example.com/wipe.png", "mimeType": "image/png", "sizes": ["48x48"]}],
		"execution": {"taskSupport": "optional"},
		"_meta": {
			"com.example/owner": "ops",
			"com.example/tier": "gold",
			"dev.keel/deprecatedIn": "1.4.0",
			"dev.keel/module": "admin"
		}
	}`, string(got))

	o := tool.Options()
	assert.Equal(t, 3*time.Second, o.Timeout)
	assert.True(t, o.Serial)
	assert.True(t, o.Destructive)
	assert.Equal(t, "admin", o.Module)
	o.Icons[0].Src = "mutated"
	assert.Equal(t, "https://example.com/wipe.png", tool.Options().Icons[0].Src, "Options returns a copy")

	t.Run("read-only hint", func(t *testing.T) {
		require.NoError(t, r.AddTool(rawTool("look", objectSchema), okHandler("x"), &registry.ToolOptions{ReadOnly: true}))
		tool, _ := r.Lookup("look")
		require.NotNil(t, tool.Definition().Annotations)
		assert.True(t, *tool.Definition().Annotations.ReadOnlyHint)
		assert.Nil(t, tool.Definition().Annotations.DestructiveHint)
	})

	bad := []struct {
		name string
		opts registry.ToolOptions
		def  *mcp.Tool
		want string
	}{
		{"destructive and read-only", registry.ToolOptions{Destructive: true, ReadOnly: true}, nil, "exclude each other"},
		{"task support", registry.ToolOptions{TaskSupport: "sometimes"}, nil, "TaskSupport"},
		{"meta key in options", registry.ToolOptions{Meta: mcp.Meta{"-bad-": 1}}, nil, "_meta key"},
		{"meta key prefix", registry.ToolOptions{Meta: mcp.Meta{"1com.example/x": 1}}, nil, "_meta key"},
		{"meta key in definition", registry.ToolOptions{}, &mcp.Tool{Name: "bad", InputSchema: json.RawMessage(objectSchema), Meta: mcp.Meta{"a b": 1}}, "_meta key"},
		{"nil handler", registry.ToolOptions{}, nil, "nil handler"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.def
			if d == nil {
				d = rawTool("bad", objectSchema)
			}
			h := okHandler("x")
			if tt.name == "nil handler" {
				h = nil
			}
			requireRegistrationError(t, r.AddTool(d, h, &tt.opts), "bad", tt.want)
		})
	}
	assert.Error(t, r.AddTool(nil, okHandler("x"), nil))
}

func TestValidMetaKey(t *testing.T) {
	for k, ok := range map[string]bool{
		"":                                     true,
		"x":                                    true,
		"correlationId":                        true,
		"a.b_c-d":                              true,
		"dev.keel/module":                      true,
		"io.modelcontextprotocol/related-task": true,
		"com.example/":                         true,
		"-x":                                   false,
		"x-":                                   false,
		"/x":                                   false,
		"1dev/x":                               false,
		"dev-/x":                               false,
		"dev..keel/x":                          false,
		"dev.keel/a/b":                         false,
		"a b":                                  false,
	} {
		assert.Equal(t, ok, registry.ValidMetaKey(k), "%q", k)
	}
}

func TestListToolsSortedAndCached(t *testing.T) {
	r := registry.New(nil)
	var changes atomic.Int32
	r.OnChange(func() {
		changes.Add(1)
		_, _ = r.ListTools(context.Background()) // listeners may call the registry
	})
	for _, n := range []string{"charlie", "alpha", "bravo", "Zulu", "alpha.2", "alpha_1"} {
		require.NoError(t, r.AddTool(rawTool(n, objectSchema), okHandler(n), nil))
	}
	names := func(ts []*mcp.Tool) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	list, err := r.ListTools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"Zulu", "alpha", "alpha.2", "alpha_1", "bravo", "charlie"}, names(list))

	again, _ := r.ListTools(context.Background())
	assert.Same(t, &list[0], &again[0], "the sorted slice is cached")

	tools := r.Tools()
	require.Len(t, tools, 6)
	assert.Equal(t, "Zulu", tools[0].Name())

	assert.True(t, r.Remove("bravo"))
	assert.False(t, r.Remove("bravo"))
	assert.Equal(t, int32(7), changes.Load(), "6 additions and 1 removal")
	after, _ := r.ListTools(context.Background())
	assert.Equal(t, []string{"Zulu", "alpha", "alpha.2", "alpha_1", "charlie"}, names(after))
	assert.Equal(t, []string{"Zulu", "alpha", "alpha.2", "alpha_1", "bravo", "charlie"}, names(list), "earlier lists are not modified")
	_, ok := r.Lookup("bravo")
	assert.False(t, ok)

	require.NoError(t, r.AddTool(rawTool("bravo", objectSchema), okHandler("b"), nil))
	after, _ = r.ListTools(context.Background())
	assert.Equal(t, []string{"Zulu", "alpha", "alpha.2", "alpha_1", "bravo", "charlie"}, names(after))
}

func TestUnknownTool(t *testing.T) {
	r := registry.New(nil)
	_, err := r.CallTool(context.Background(), newCall("nope", `{}`))
	var rpcErr *mcp.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, int64(mcp.CodeInvalidParams), rpcErr.Code)
	assert.Contains(t, rpcErr.Message, `"nope"`)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrNotFound, se.Code)
	assert.Equal(t, map[string]any{"tool": "nope"}, se.Details)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.Equal(t, "run-1", se.RunID)
}

func TestConcurrentRegisterAndCall(t *testing.T) {
	r := registry.New(nil)
	type in struct {
		Message string `json:"message"`
	}
	echo := func(_ context.Context, v in) (string, error) { return v.Message, nil }
	require.NoError(t, registry.Register(r, "echo", "", echo, nil))
	var notified atomic.Int64
	r.OnChange(func() { notified.Add(1) })

	const workers, rounds = 4, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(2)
		go func() { // writers: add and remove their own tools, re-register echo
			defer wg.Done()
			for i := range rounds {
				name := fmt.Sprintf("t%d_%d", w, i%5)
				_ = registry.Register(r, name, "", echo, nil)
				assert.ErrorIs(t, registry.Register(r, "echo", "", echo, nil), registry.ErrDuplicateTool)
				if i%2 == 1 {
					r.Remove(name)
				}
			}
		}()
		go func() { // readers
			defer wg.Done()
			ctx := context.Background()
			for range rounds {
				res, err := r.CallTool(ctx, newCall("echo", `{"message":"hi"}`))
				if assert.NoError(t, err) {
					assert.Equal(t, "hi", res.Content[0].Text)
				}
				list, err := r.ListTools(ctx)
				assert.NoError(t, err)
				for i := 1; i < len(list); i++ {
					assert.Less(t, list[i-1].Name, list[i].Name)
				}
				for _, tool := range r.Tools() {
					_ = tool.ValidateArguments(json.RawMessage(`{"message":"x"}`))
				}
			}
		}()
	}
	wg.Wait()
	assert.Positive(t, notified.Load())
}

func TestHandlerErrorsAreReturnedUnchanged(t *testing.T) {
	r := registry.New(nil)
	sentinel := errors.New("boom")
	toolErr := mcp.NewToolError(mcp.ErrUnauthorized, "no", nil)
	registry.MustRegister(r, "plain", "", func(context.Context, struct{}) (string, error) { return "", sentinel }, nil)
	registry.MustRegister(r, "tool", "", func(context.Context, struct{}) (struct{ A int }, error) { return struct{ A int }{}, toolErr }, nil)
	require.NoError(t, r.AddTool(rawTool("raw", objectSchema), func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
		return nil, sentinel
	}, nil))

	_, err := r.CallTool(context.Background(), newCall("plain", `{}`))
	assert.Same(t, sentinel, err)
	_, err = r.CallTool(context.Background(), newCall("tool", `{}`))
	assert.Same(t, toolErr, err)
	_, err = r.CallTool(context.Background(), newCall("raw", `{}`))
	assert.Same(t, sentinel, err)
}

func TestMustRegisterPanics(t *testing.T) {
	r := registry.New(nil)
	assert.Panics(t, func() {
		registry.MustRegister(r, "bad name", "", func(context.Context, struct{}) (string, error) { return "", nil }, nil)
	})
}
