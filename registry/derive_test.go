package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

type leaf struct {
	ID   int    `json:"id" jsonschema:"minimum=0"`
	Note string `json:"note,omitempty"`
}

type Base struct {
	Owner string `json:"owner"`
}

type Extra struct {
	Level int `json:"level"`
}

type Tree struct {
	Name     string  `json:"name"`
	Children []*Tree `json:"children"`
	Parent   *Tree   `json:"parent"`
	Meta     map[string]*Tree
}

type Page[T any] struct {
	Items []T `json:"items"`
	Next  *T  `json:"next"`
}

// nilOut has every kind of member that may be nil.
type nilOut struct {
	Base
	*Extra
	Slice     []string          `json:"slice"`
	PtrSlice  []*leaf           `json:"ptrSlice"`
	Map       map[string]int    `json:"map"`
	PtrMap    map[string]*leaf  `json:"ptrMap"`
	IntMap    map[int]*leaf     `json:"intMap"`
	Ptr       *leaf             `json:"ptr" jsonschema:"description=maybe a leaf"`
	IntPtr    *int              `json:"intPtr"`
	Omitted   *leaf             `json:"omitted,omitempty"`
	Zeroed    *int              `json:"zeroed,omitzero"`
	Iface     any               `json:"iface"`
	Stringer  interface{ M() }  `json:"stringer"`
	Time      *time.Time        `json:"time"`
	Bytes     []byte            `json:"bytes"`
	Raw       jsontext.Value    `json:"raw"`
	Content   []mcp.Content     `json:"content"`
	Nested    struct{ P *leaf } `json:"nested"`
	Tree      Tree              `json:"tree"`
	Page      Page[leaf]        `json:"page"`
	Array     [2]*leaf          `json:"array"`
	Nullable  *string           `json:"nullable" jsonschema:"nullable"`
	Any       map[string]any    `json:"any"`
	Anonymous *struct{ X *int } `json:"anonymous"`
}

// compileDerived derives and compiles the schema of t.
func compileDerived(t *testing.T, typ reflect.Type) (jsontext.Value, *compiledSchema) {
	t.Helper()
	s, err := deriveSchema(typ)
	require.NoError(t, err)
	text, c, err := compileSchema(s)
	require.NoError(t, err, "schema: %s", s)
	return text, c
}

func validateJSON(t *testing.T, c *compiledSchema, b []byte) []Violation {
	t.Helper()
	v, err := decodeInstance(b)
	require.NoError(t, err)
	return c.validate(v)
}

func TestZeroOutputsMatchTheirOwnSchema(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[nilOut](),
		reflect.TypeFor[Tree](),
		reflect.TypeFor[*Tree](),
		reflect.TypeFor[Page[leaf]](),
		reflect.TypeFor[Page[*leaf]](),
		reflect.TypeFor[map[string]*leaf](),
		reflect.TypeFor[struct{}](),
	} {
		t.Run(typ.String(), func(t *testing.T) {
			schema, c := compileDerived(t, typ)
			zero := reflect.New(typ)
			if typ.Kind() == reflect.Pointer {
				zero.Elem().Set(reflect.New(typ.Elem()))
			}
			b, err := jsonv2.Marshal(zero.Interface()) // the wire codec
			require.NoError(t, err)
			assert.Empty(t, validateJSON(t, c, b), "value %s\nschema %s", b, schema)
		})
	}

	t.Run("populated values with nil inside", func(t *testing.T) {
		_, c := compileDerived(t, reflect.TypeFor[nilOut]())
		n := 3
		v := nilOut{
			Extra:    &Extra{Level: 2},
			PtrSlice: []*leaf{nil, {ID: 1}},
			PtrMap:   map[string]*leaf{"a": nil},
			IntMap:   map[int]*leaf{1: nil},
			Iface:    nil,
			IntPtr:   &n,
			Tree:     Tree{Children: []*Tree{nil, {Name: "c"}}, Meta: map[string]*Tree{"x": nil}},
			Page:     Page[leaf]{Items: []leaf{{ID: 2}}, Next: &leaf{ID: 3}},
			Content:  []mcp.Content{mcp.Text("hi")},
			Raw:      jsontext.Value(`[1,{"a":null}]`),
			Any:      map[string]any{"k": nil},
		}
		b, err := jsonv2.Marshal(v)
		require.NoError(t, err)
		assert.Empty(t, validateJSON(t, c, b), "%s", b)
		// Constraints still hold inside nullable members.
		v.PtrSlice[1].ID = -1
		b, _ = jsonv2.Marshal(v)
		assert.Equal(t, []Violation{{Path: "/ptrSlice/1/id", Message: "minimum: got -1, want 0"}}, validateJSON(t, c, b))
	})
}

func TestDerivedSchemaShape(t *testing.T) {
	s, err := deriveSchema(reflect.TypeFor[nilOut]())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, jsonv2.Unmarshal(s, &m))
	assert.Equal(t, "object", m["type"], "the root is inline")
	for _, k := range []string{"$ref", "$schema", "$id"} {
		assert.NotContains(t, m, k)
	}
	defs := m["$defs"].(map[string]any)
	assert.NotContains(t, defs, "nilOut", "the root is not duplicated when nothing refers to it")
	assert.Contains(t, defs, "Tree", "recursive types keep their definition")
	assert.Contains(t, defs, "Page_registry.leaf", "generic type names are safe identifiers")
	props := m["properties"].(map[string]any)
	assert.Equal(t, map[string]any{
		"description": "maybe a leaf",
		"anyOf":       []any{map[string]any{"$ref": "#/$defs/leaf"}, map[string]any{"type": "null"}},
	}, props["ptr"], "annotations stay on the outside")
	assert.Equal(t, map[string]any{"type": "integer"}, props["zeroed"], "omitzero members are never null")
	assert.Equal(t, map[string]any{"$ref": "#/$defs/leaf"}, props["omitted"])
	assert.Equal(t, true, props["iface"], "interfaces accept anything already")
	assert.Equal(t, true, props["raw"], "values with their own encoding are not described by their Go type")
	assert.Equal(t, map[string]any{"type": "array", "items": true}, props["content"])
	assert.Contains(t, props, "owner", "embedded struct members are promoted")
	assert.Contains(t, props, "level", "embedded pointer members are promoted")
	assert.Contains(t, m["required"], "owner")
	assert.NotContains(t, m["required"], "level", "members of a nil embedded pointer are absent")

	t.Run("recursive root", func(t *testing.T) {
		s, err := deriveSchema(reflect.TypeFor[Tree]())
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, jsonv2.Unmarshal(s, &m))
		assert.Equal(t, "object", m["type"])
		assert.Contains(t, m["$defs"], "Tree")
		assert.Contains(t, string(s), `"$ref":"#/$defs/Tree"`)
	})

	t.Run("same name in two scopes", func(t *testing.T) {
		type Item struct {
			A int `json:"a"`
		}
		type outer struct {
			One   Item `json:"one"`
			Other func() reflect.Type
		}
		other := func() reflect.Type {
			type Item struct {
				B string `json:"b"`
			}
			return reflect.TypeFor[Item]()
		}()
		typ := reflect.StructOf([]reflect.StructField{
			{Name: "One", Type: reflect.TypeFor[Item](), Tag: `json:"one"`},
			{Name: "Two", Type: other, Tag: `json:"two"`},
		})
		_, c := compileDerived(t, typ)
		assert.Empty(t, validateJSON(t, c, []byte(`{"one":{"a":1},"two":{"b":"x"}}`)))
		assert.NotEmpty(t, validateJSON(t, c, []byte(`{"one":{"b":"x"},"two":{"a":1}}`)))
		s, _ := deriveSchema(typ)
		assert.Contains(t, string(s), `"Item_2"`)
		_ = outer{}
	})

	t.Run("unsupported types", func(t *testing.T) {
		for _, typ := range []reflect.Type{reflect.TypeFor[struct{ C chan int }](), reflect.TypeFor[struct{ F func() }](), reflect.TypeFor[struct{ Z complex128 }]()} {
			_, err := deriveSchema(typ)
			assert.ErrorContains(t, err, "cannot derive", typ.String())
		}
	})
}

func TestRecursiveTypeEndToEnd(t *testing.T) {
	r := New(nil)
	MustRegister(r, "tree", "", func(_ context.Context, in Tree) (Tree, error) {
		in.Name = strings.ToUpper(in.Name)
		return in, nil
	}, nil)
	res, err := r.CallTool(context.Background(), &mcp.ToolCall{Name: "tree", Arguments: json.RawMessage(
		`{"name":"root","children":[{"name":"a","children":[],"parent":null,"Meta":{}}],"parent":null,"Meta":{}}`)})
	require.NoError(t, err)
	assert.Equal(t, `{"name":"ROOT","children":[{"name":"a","children":[],"parent":null,"Meta":{}}],"parent":null,"Meta":{}}`, string(res.StructuredContent))

	_, err = r.CallTool(context.Background(), &mcp.ToolCall{Name: "tree", Arguments: json.RawMessage(
		`{"name":"root","children":[{"name":1,"children":[],"parent":null,"Meta":{}}],"parent":null,"Meta":{}}`)})
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []Violation{{Path: "/children/0/name", Message: "got number, want string"}}, se.Details["violations"],
		"the null branch of the nullable item is not listed")

	_, err = r.CallTool(context.Background(), &mcp.ToolCall{Name: "tree", Arguments: json.RawMessage(
		`{"name":"root","children":[],"parent":"up","Meta":{}}`)})
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []Violation{{Path: "/parent", Message: "got string, want object or null"}}, se.Details["violations"])
}

func TestZeroOutputThroughTheRegistry(t *testing.T) {
	r := New(nil)
	MustRegister(r, "zero", "", func(context.Context, struct{}) (nilOut, error) { return nilOut{}, nil }, nil)
	res, err := r.CallTool(context.Background(), &mcp.ToolCall{Name: "zero", Arguments: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Contains(t, string(res.StructuredContent), `"slice":[]`)
	assert.Contains(t, string(res.StructuredContent), `"ptr":null`)
}

func TestDecodeInstanceMatchesReference(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-1.5e10`, `"x\u00e9\n"`,
		`{"a":[1,2,{"b":null}],"c":"d","e":{"f":[]}}`,
		`123456789012345678901234567890`,
		` {"sp" : [ 1 , 2 ] } `,
	} {
		want, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(doc)))
		require.NoError(t, err)
		got, err := decodeInstance([]byte(doc))
		require.NoError(t, err)
		assert.Equal(t, want, got, doc)
	}
	for _, bad := range []string{``, `{`, `{"a":1,"a":2}`, `[1,]`, `{} x`, "\"\xff\"", `{"a" 1}`} {
		_, err := decodeInstance([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

func TestCodecProbe(t *testing.T) {
	r := New(nil)
	err := Register(r, "dur", "", func(context.Context, struct{}) (struct {
		D time.Duration `json:"d"`
	}, error) {
		return struct {
			D time.Duration `json:"d"`
		}{}, nil
	}, nil)
	assert.ErrorContains(t, err, "wire codec cannot encode")
	err = Register(r, "durin", "", func(context.Context, struct {
		D time.Duration `json:"d"`
	}) (string, error) {
		return "", nil
	}, nil)
	assert.ErrorContains(t, err, "wire codec cannot encode")

	type withFormat struct {
		D time.Duration `json:"d,format:nano"`
	}
	MustRegister(r, "nano", "", func(_ context.Context, in withFormat) (withFormat, error) { return in, nil }, nil)
	res, err := r.CallTool(context.Background(), &mcp.ToolCall{Name: "nano", Arguments: json.RawMessage(`{"d":1500}`)})
	require.NoError(t, err)
	assert.Equal(t, `{"d":1500}`, string(res.StructuredContent))
}

// A protocol type whose JSON methods only make encoding/json write its
// tagged fields (mcp.Annotations, mcp.Icon) is described by its structure;
// one with its own wire form (mcp.Content) is not.
func TestDerivedSchemaOfProtocolTypes(t *testing.T) {
	type out struct {
		Annotations mcp.Annotations `json:"annotations"`
		Icons       []mcp.Icon      `json:"icons"`
		Block       mcp.Content     `json:"block"`
	}
	s, err := deriveSchema(reflect.TypeFor[out]())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, jsonv2.Unmarshal(s, &m))
	defs := m["$defs"].(map[string]any)
	require.Contains(t, defs, "Annotations")
	assert.Contains(t, defs["Annotations"].(map[string]any)["properties"], "audience")
	require.Contains(t, defs, "Icon")
	assert.Contains(t, defs["Icon"].(map[string]any)["properties"], "src")
	assert.Equal(t, true, m["properties"].(map[string]any)["block"], "a content block's wire form is its own")
}
