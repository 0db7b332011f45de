package registry_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// violations returns the violations of an INVALID_ARGUMENT or INTERNAL
// StructuredError.
func violations(t *testing.T, err error) []registry.Violation {
	t.Helper()
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	vs, ok := se.Details["violations"].([]registry.Violation)
	require.True(t, ok, "details: %#v", se.Details)
	return vs
}

func paths(vs []registry.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Path)
	}
	return out
}

func TestDialects(t *testing.T) {
	// "items" as an array is a tuple in draft-07 and not a valid schema in
	// 2020-12, so the same body tells the dialects apart.
	const tupleBody = `"type":"object","properties":{"pair":{"type":"array","items":[{"type":"string"},{"type":"integer"}]}}`
	const defsBody = `"type":"object","properties":{"a":{"$ref":"#/definitions/pos"}},"definitions":{"pos":{"type":"integer","minimum":1}}`

	t.Run("draft-07 is honoured", func(t *testing.T) {
		r := registry.New(nil)
		require.NoError(t, r.AddTool(rawTool("d7", `{"$schema":"http://json-schema.org/draft-07/schema#",`+tupleBody+`}`), okHandler("ok"), nil))
		require.NoError(t, r.AddTool(rawTool("d7defs", `{"$schema":"http://json-schema.org/draft-07/schema#",`+defsBody+`}`), okHandler("ok"), nil))
		tool, _ := r.Lookup("d7")
		assert.Nil(t, tool.ValidateArguments(json.RawMessage(`{"pair":["a",1]}`)))
		se := tool.ValidateArguments(json.RawMessage(`{"pair":[1,"a"]}`))
		require.NotNil(t, se)
		assert.Equal(t, []string{"/pair/0", "/pair/1"}, paths(violations(t, se)))
		tool, _ = r.Lookup("d7defs")
		assert.Nil(t, tool.ValidateArguments(json.RawMessage(`{"a":1}`)))
		assert.NotNil(t, tool.ValidateArguments(json.RawMessage(`{"a":0}`)))
	})
	t.Run("2020-12 is the default", func(t *testing.T) {
		r := registry.New(nil)
		err := r.AddTool(rawTool("d2020", `{`+tupleBody+`}`), okHandler("ok"), nil)
		requireRegistrationError(t, err, "d2020", "does not compile")
		err = r.AddTool(rawTool("d2020x", `{"$schema":"https://json-schema.org/draft/2020-12/schema",`+tupleBody+`}`), okHandler("ok"), nil)
		requireRegistrationError(t, err, "d2020x", "does not compile")
		require.NoError(t, r.AddTool(rawTool("prefix", `{"type":"object","properties":{"pair":{"type":"array","prefixItems":[{"type":"string"}],"items":false}}}`), okHandler("ok"), nil))
		tool, _ := r.Lookup("prefix")
		assert.Nil(t, tool.ValidateArguments(json.RawMessage(`{"pair":["a"]}`)))
		assert.NotNil(t, tool.ValidateArguments(json.RawMessage(`{"pair":["a","b"]}`)))
	})
	t.Run("other known drafts", func(t *testing.T) {
		r := registry.New(nil)
		for name, uri := range map[string]string{
			"d2019": "https://json-schema.org/draft/2019-09/schema",
			"d6":    "http://json-schema.org/draft-06/schema#",
			"d4":    "http://json-schema.org/draft-04/schema#",
		} {
			require.NoError(t, r.AddTool(rawTool(name, `{"$schema":"`+uri+`","type":"object"}`), okHandler("ok"), nil), name)
		}
	})
	t.Run("unknown dialect is refused", func(t *testing.T) {
		r := registry.New(nil)
		for _, uri := range []string{"https://example.com/my-dialect", "http://json-schema.org/draft-05/schema#", "not a uri at all"} {
			err := r.AddTool(rawTool("odd", `{"$schema":"`+uri+`","type":"object"}`), okHandler("ok"), nil)
			requireRegistrationError(t, err, "odd", "inputSchema")
		}
		assert.Zero(t, r.Len())
	})
}

func TestNothingIsFetched(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"type":"string"}`), 0o600))

	schemas := map[string]string{
		"remote ref":      `{"type":"object","properties":{"a":{"$ref":"` + srv.URL + `/s.json"}}}`,
		"remote dialect":  `{"$schema":"` + srv.URL + `/meta.json","type":"object"}`,
		"file ref":        `{"type":"object","properties":{"a":{"$ref":"file://` + filepath.ToSlash(file) + `"}}}`,
		"relative ref":    `{"type":"object","properties":{"a":{"$ref":"other.json"}}}`,
		"unresolved defs": `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
	}
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			r := registry.New(nil)
			err := r.AddTool(rawTool("fetch", schema), okHandler("ok"), nil)
			requireRegistrationError(t, err, "fetch", "inputSchema")
		})
	}
	assert.Zero(t, hits.Load(), "no request reached the server")

	t.Run("local refs resolve", func(t *testing.T) {
		r := registry.New(nil)
		require.NoError(t, r.AddTool(rawTool("local", `{"$id":"https://example.com/root.json","type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"https://example.com/root.json#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`), okHandler("ok"), nil))
		tool, _ := r.Lookup("local")
		assert.Nil(t, tool.ValidateArguments(json.RawMessage(`{"a":"x","b":"y"}`)))
		assert.Equal(t, []string{"/a", "/b"}, paths(violations(t, tool.ValidateArguments(json.RawMessage(`{"a":1,"b":2}`)))))
	})
}

func TestEveryViolationIsListed(t *testing.T) {
	r := registry.New(nil)
	schema := `{
		"type": "object",
		"required": ["name", "items"],
		"additionalProperties": false,
		"properties": {
			"name": {"type": "string", "minLength": 3},
			"a/b": {"type": "integer"},
			"items": {"type": "array", "items": {
				"type": "object",
				"required": ["id"],
				"properties": {"id": {"type": "integer", "maximum": 10}, "tag": {"enum": ["x", "y"]}}
			}}
		}
	}`
	require.NoError(t, r.AddTool(rawTool("many", schema), okHandler("ok"), nil))
	args := `{"name":"ab","a/b":"x","extra":true,"items":[{"id":11,"tag":"z"},{},{"id":"7"}]}`
	_, err := r.CallTool(context.Background(), newCall("many", args))
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.Equal(t, "run-1", se.RunID)
	assert.Equal(t, "many", se.Details["tool"])
	vs := violations(t, err)
	assert.Equal(t, []string{"", "/a~1b", "/items/0/id", "/items/0/tag", "/items/1", "/items/2/id", "/name"}, paths(vs))
	for _, v := range vs {
		assert.NotEmpty(t, v.Message)
	}
	assert.Contains(t, vs[0].Message, "extra")
	assert.Contains(t, vs[4].Message, "id")
	assert.Contains(t, se.Message, `"many"`)
	assert.Contains(t, se.Message, "and 6 more")

	// The wire form of the details.
	b, err := jsonv2.Marshal(se)
	require.NoError(t, err)
	assert.Contains(t, string(b), `{"path":"/a~1b","message":`)

	t.Run("non-object arguments", func(t *testing.T) {
		tool, _ := r.Lookup("many")
		for _, args := range []string{`[]`, `"x"`, `null`, `1`} {
			vs := violations(t, tool.ValidateArguments(json.RawMessage(args)))
			assert.Equal(t, []string{""}, paths(vs), args)
		}
	})
	t.Run("invalid JSON", func(t *testing.T) {
		tool, _ := r.Lookup("many")
		for _, args := range []string{`{`, `{"name":"abc","name":"abc"}`, "{\"name\":\"\xff\"}", `{} {}`} {
			se := tool.ValidateArguments(json.RawMessage(args))
			require.NotNil(t, se, args)
			assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
			assert.Contains(t, se.Message, "not valid JSON")
		}
	})
	t.Run("absent arguments are {}", func(t *testing.T) {
		tool, _ := r.Lookup("many")
		vs := violations(t, tool.ValidateArguments(nil))
		require.Equal(t, []string{""}, paths(vs), "one failed keyword: required")
		assert.Contains(t, vs[0].Message, "name")
		assert.Contains(t, vs[0].Message, "items")
	})
}

func TestNumbersKeepTheirPrecision(t *testing.T) {
	r := registry.New(nil)
	// 2^53+1 rounds to 2^53 as a float64 and would pass the maximum.
	require.NoError(t, r.AddTool(rawTool("big", `{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740992}}}`), okHandler("ok"), nil))
	tool, _ := r.Lookup("big")
	assert.Nil(t, tool.ValidateArguments(json.RawMessage(`{"n":9007199254740992}`)))
	assert.NotNil(t, tool.ValidateArguments(json.RawMessage(`{"n":9007199254740993}`)))
	assert.Nil(t, tool.ValidateArguments(json.RawMessage(`{"n":1.0}`)), "1.0 is an integer in JSON Schema")
	assert.NotNil(t, tool.ValidateArguments(json.RawMessage(`{"n":1.5}`)))
}

// Constrained is an input type using invopop's tag syntax.
type Constrained struct {
	Name  string   `json:"name" jsonschema:"minLength=2,maxLength=8,description=Who to greet"`
	Count int      `json:"count" jsonschema:"minimum=1,maximum=5"`
	Color string   `json:"color" jsonschema:"enum=red,enum=green"`
	Code  string   `json:"code,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	Tags  []string `json:"tags,omitempty" jsonschema:"maxItems=2"`
	Ratio float64  `json:"ratio,omitempty" jsonschema:"exclusiveMaximum=1"`
}

func TestConstraintTags(t *testing.T) {
	r := registry.New(nil)
	var got Constrained
	registry.MustRegister(r, "greet", "Greets.", func(_ context.Context, in Constrained) (string, error) {
		got = in
		return "hi " + in.Name, nil
	}, nil)
	tool, _ := r.Lookup("greet")

	var schema map[string]any
	require.NoError(t, jsonv2.Unmarshal(tool.Definition().InputSchema, &schema))
	assert.Equal(t, "object", schema["type"])
	assert.NotContains(t, schema, "$schema")
	assert.NotContains(t, schema, "$id")
	assert.NotContains(t, schema, "$ref")
	assert.Equal(t, false, schema["additionalProperties"])
	assert.ElementsMatch(t, []any{"name", "count", "color"}, schema["required"])
	props := schema["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "string", "minLength": 2.0, "maxLength": 8.0, "description": "Who to greet"}, props["name"])
	assert.Equal(t, map[string]any{"type": "integer", "minimum": 1.0, "maximum": 5.0}, props["count"])
	assert.Equal(t, map[string]any{"type": "string", "enum": []any{"red", "green"}}, props["color"])
	assert.Equal(t, map[string]any{"type": "string", "pattern": "^[A-Z]{3}$"}, props["code"])
	assert.Equal(t, 2.0, props["tags"].(map[string]any)["maxItems"])
	assert.Equal(t, 1.0, props["ratio"].(map[string]any)["exclusiveMaximum"])
	assert.Nil(t, tool.Definition().OutputSchema, "string results have no output schema")

	res, err := r.CallTool(context.Background(), newCall("greet", `{"name":"Ann","count":5,"color":"red","code":"ABC","tags":["a"],"ratio":0.5}`))
	require.NoError(t, err)
	assert.Equal(t, "hi Ann", res.Content[0].Text)
	assert.Nil(t, res.StructuredContent)
	assert.Equal(t, Constrained{Name: "Ann", Count: 5, Color: "red", Code: "ABC", Tags: []string{"a"}, Ratio: 0.5}, got)

	got = Constrained{}
	_, err = r.CallTool(context.Background(), newCall("greet", `{"name":"A","count":6,"color":"blue","code":"abc","tags":["a","b","c"],"ratio":1}`))
	assert.Equal(t, []string{"/code", "/color", "/count", "/name", "/ratio", "/tags"}, paths(violations(t, err)))
	assert.Zero(t, got, "the handler did not run")

	_, err = r.CallTool(context.Background(), newCall("greet", `{"name":"Ann"}`))
	vs := violations(t, err)
	require.Equal(t, []string{""}, paths(vs))
	assert.Contains(t, vs[0].Message, "count")
	assert.Contains(t, vs[0].Message, "color")
}

type echoIn struct {
	Message string `json:"message"`
}

func TestMemberNamesAreCaseSensitive(t *testing.T) {
	r := registry.New(nil)
	var seen []string
	registry.MustRegister(r, "echo", "", func(_ context.Context, in echoIn) (string, error) {
		seen = append(seen, in.Message)
		return in.Message, nil
	}, nil)

	// Through CallTool the schema refuses it: "Message" is not a known
	// member, and "message" is missing.
	_, err := r.CallTool(context.Background(), newCall("echo", `{"Message":"x"}`))
	vs := violations(t, err)
	require.Len(t, vs, 2)
	assert.Contains(t, vs[0].Message+vs[1].Message, "Message")
	assert.Contains(t, vs[0].Message+vs[1].Message, "message")
	assert.Empty(t, seen)

	// Even without validation the codec does not fold case.
	tool, _ := r.Lookup("echo")
	res, err := tool.Invoke(context.Background(), newCall("echo", ""), json.RawMessage(`{"Message":"x","MESSAGE":"y"}`))
	require.NoError(t, err)
	assert.Equal(t, "", res.Content[0].Text)
	assert.Equal(t, []string{""}, seen)
}

func TestResultWrapping(t *testing.T) {
	type out struct {
		Sum   int    `json:"sum"`
		Label string `json:"label,omitempty"`
	}
	type in struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	r := registry.New(nil)
	registry.MustRegister(r, "add", "Adds.", func(_ context.Context, v in) (out, error) { return out{Sum: v.A + v.B}, nil }, nil)
	registry.MustRegister(r, "addp", "Adds.", func(_ context.Context, v *in) (*out, error) { return &out{Sum: v.A + v.B, Label: "p"}, nil }, nil)
	registry.MustRegister(r, "raw", "", func(_ context.Context, v in) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("a"), mcp.Text("b")}}, nil
	}, nil)
	registry.MustRegister(r, "nilres", "", func(context.Context, in) (*mcp.CallToolResult, error) { return nil, nil }, nil)

	res, err := r.CallTool(context.Background(), newCall("add", `{"a":2,"b":3}`))
	require.NoError(t, err)
	assert.Equal(t, `{"sum":5}`, string(res.StructuredContent))
	require.Len(t, res.Content, 1)
	assert.Equal(t, mcp.ContentText, res.Content[0].Type)
	assert.Equal(t, `{"sum":5}`, res.Content[0].Text)
	assert.False(t, res.IsError)

	tool, _ := r.Lookup("add")
	assert.True(t, tool.HasOutputSchema())
	assert.JSONEq(t, `{"type":"object","properties":{"sum":{"type":"integer"},"label":{"type":"string"}},"additionalProperties":false,"required":["sum"]}`,
		string(tool.Definition().OutputSchema))

	res, err = r.CallTool(context.Background(), newCall("addp", `{"a":2,"b":3}`))
	require.NoError(t, err)
	assert.Equal(t, `{"sum":5,"label":"p"}`, string(res.StructuredContent))

	res, err = r.CallTool(context.Background(), newCall("raw", `{"a":1,"b":1}`))
	require.NoError(t, err)
	assert.Len(t, res.Content, 2)
	tool, _ = r.Lookup("raw")
	assert.Nil(t, tool.Definition().OutputSchema)

	res, err = r.CallTool(context.Background(), newCall("nilres", `{"a":1,"b":1}`))
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Empty(t, res.Content)
}

func TestHandlerSeesTheCall(t *testing.T) {
	r := registry.New(nil)
	var got *mcp.ToolCall
	registry.MustRegister(r, "who", "", func(ctx context.Context, _ struct{}) (string, error) {
		got = mcp.ToolCallFromContext(ctx)
		return "", nil
	}, nil)
	call := newCall("who", `{}`)
	_, err := r.CallTool(context.Background(), call)
	require.NoError(t, err)
	assert.Same(t, call, got)

	// A context that already carries the call is used as is.
	ctx := mcp.WithToolCall(context.Background(), call)
	tool, _ := r.Lookup("who")
	got = nil
	_, err = tool.Invoke(ctx, call, nil)
	require.NoError(t, err)
	assert.Same(t, call, got)
}

func TestOutputSchemaMismatch(t *testing.T) {
	type out struct {
		Level int `json:"level" jsonschema:"maximum=10"`
	}
	r := registry.New(nil)
	registry.MustRegister(r, "level", "", func(_ context.Context, in struct {
		L int `json:"l"`
	}) (out, error) {
		return out{Level: in.L}, nil
	}, nil)
	registry.MustRegister(r, "nilptr", "", func(context.Context, struct{}) (*out, error) { return nil, nil }, nil)

	_, err := r.CallTool(context.Background(), newCall("level", `{"l":10}`))
	require.NoError(t, err)
	_, err = r.CallTool(context.Background(), newCall("level", `{"l":11}`))
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.Equal(t, "output_schema_mismatch", se.Details["reason"])
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.Equal(t, []string{"/level"}, paths(violations(t, err)))

	_, err = r.CallTool(context.Background(), newCall("nilptr", `{}`))
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "output_schema_mismatch", se.Details["reason"])
	assert.Equal(t, []string{""}, paths(violations(t, err)))

	t.Run("raw tool with an output schema", func(t *testing.T) {
		def := rawTool("rawout", objectSchema)
		def.OutputSchema = json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)
		var res *mcp.CallToolResult
		require.NoError(t, r.AddTool(def, func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			return res, nil
		}, nil))
		res = &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":1}`)}
		_, err := r.CallTool(context.Background(), newCall("rawout", `{}`))
		require.NoError(t, err)

		res = &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":"one"}`)}
		_, err = r.CallTool(context.Background(), newCall("rawout", `{}`))
		assert.Equal(t, []string{"/n"}, paths(violations(t, err)))

		res = mcp.TextResult("no structured content")
		_, err = r.CallTool(context.Background(), newCall("rawout", `{}`))
		vs := violations(t, err)
		require.Len(t, vs, 1)
		assert.Contains(t, vs[0].Message, "structuredContent is missing")

		res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.Text("failed")}}
		got, err := r.CallTool(context.Background(), newCall("rawout", `{}`))
		require.NoError(t, err, "error results are not checked")
		assert.True(t, got.IsError)
	})
}

func TestResultNotSerializable(t *testing.T) {
	type out struct {
		Value any     `json:"value"`
		F     float64 `json:"f"`
	}
	r := registry.New(nil)
	var ret out
	registry.MustRegister(r, "bad", "", func(context.Context, struct{}) (out, error) { return ret, nil }, nil)
	for name, v := range map[string]out{
		"channel": {Value: make(chan int)},
		"func":    {Value: func() {}},
		"NaN":     {F: math.NaN()},
	} {
		t.Run(name, func(t *testing.T) {
			ret = v
			_, err := r.CallTool(context.Background(), newCall("bad", `{}`))
			var se *mcp.StructuredError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, mcp.ErrInternal, se.Code)
			assert.Equal(t, "result_not_serializable", se.Details["reason"])
			assert.Equal(t, "run-1", se.RunID)
		})
	}
}

func TestDecodeFailureAfterValidation(t *testing.T) {
	// A raw-looking typed input whose schema cannot express everything the
	// codec checks still fails cleanly as INVALID_ARGUMENT.
	type in struct {
		N int8 `json:"n"`
	}
	r := registry.New(nil)
	registry.MustRegister(r, "small", "", func(context.Context, in) (string, error) { return "ok", nil }, nil)
	_, err := r.CallTool(context.Background(), newCall("small", `{"n":1000}`))
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.True(t, strings.Contains(se.Message, "input type"), se.Message)
}
