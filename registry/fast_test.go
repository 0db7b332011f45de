package registry

import (
	"reflect"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastSchemas are schemas inside the fast pre-check's subset, exercising
// each keyword it models.
var fastSchemas = []string{
	`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}`,
	`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":4,"pattern":"^[a-zé]+$"},"e":{"enum":["a","b\n"]},"t":{"type":["string","null"]}},"required":["s"]}`,
	`{"type":"object","properties":{"i":{"type":"integer","minimum":-3,"maximum":9007199254740991},"n":{"type":"number","exclusiveMinimum":0.5,"exclusiveMaximum":10},"x":{"type":"number"},"any":{}},"additionalProperties":{"type":"boolean"}}`,
	`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3},"b":{"type":"array"},"f":false,"t":true}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"N":{"type":"object","properties":{"v":{"type":"string"},"next":{"anyOf":[{"$ref":"#/$defs/N"},{"type":"null"}]},"kids":{"type":"array","items":{"$ref":"#/$defs/N"}}},"required":["v"],"additionalProperties":false}},"properties":{"root":{"$ref":"#/$defs/N","description":"the root"},"opt":{"anyOf":[{"type":"null"},{"type":"integer","maximum":0.5}]}}}`,
}

// slowSchemas use keywords outside the subset: they get no pre-check.
var slowSchemas = []string{
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
	`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"null"}]}}}`,
	`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`,
	`{"type":"object","properties":{"a":{"type":"integer","multipleOf":2}}}`,
	`{"type":"object","properties":{"a":{"const":1}}}`,
	`{"type":"object","properties":{"a":{"enum":[1,2]}}}`,
	`{"type":"object","$id":"https://example.com/s"}`,
	`{"type":"object","properties":{"a":{"$ref":"#/$defs/x","minLength":1}},"$defs":{"x":{"type":"string"}}}`,
	`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`,
	`{"type":"object","properties":{"a":{"maximum":1e300}}}`,
}

var fastInstances = []string{
	`{}`, `{"message":"hi"}`, `{"message":""}`, `{"message":1}`, `{"message":"hi","x":1}`, `{"Message":"hi"}`,
	`{"s":"abc"}`, `{"s":"a"}`, `{"s":"abcde"}`, `{"s":"ABC"}`, `{"s":"éé"}`, `{"s":"\u00e9\u00e9"}`, `{"s":"ab","e":"b\n"}`, `{"s":"ab","e":"c"}`, `{"s":"ab","t":null}`, `{"s":"ab","t":1}`,
	`{"i":-3}`, `{"i":-4}`, `{"i":9007199254740991}`, `{"i":9007199254740992}`, `{"i":1.0}`, `{"i":1.5}`, `{"i":1e2}`,
	`{"n":0.5}`, `{"n":1}`, `{"n":10}`, `{"n":9.99}`, `{"x":1.5e300}`, `{"z":true}`, `{"z":"no"}`, `{"any":[{"a":null}]}`,
	`{"a":[1]}`, `{"a":[]}`, `{"a":[1,2,3,4]}`, `{"a":[1.5]}`, `{"b":[null,{}]}`, `{"f":1}`, `{"t":{"deep":[1]}}`,
	`{"root":{"v":"a","next":{"v":"b","next":null,"kids":[]},"kids":[{"v":"c"}]}}`, `{"root":{"v":"a","next":{"next":null}}}`, `{"root":{"v":"a","kids":[null]}}`,
	`{"opt":null}`, `{"opt":0}`, `{"opt":1}`, `{"opt":"x"}`,
	`[]`, `null`, `"x"`, `1`, `{"message":"hi","message":"ho"}`, `{"message":"hi"} x`, `{"message":"hi"`, "{\"message\":\"\xff\"}",
}

func compiled(t testing.TB, schema string) *compiledSchema {
	t.Helper()
	_, c, err := compileSchema(jsontext.Value(schema))
	require.NoError(t, err, schema)
	return c
}

// fullValid is the verdict of the full validator alone.
func fullValid(c *compiledSchema, raw []byte) bool {
	v, err := decodeInstance(raw)
	return err == nil && c.validate(v) == nil
}

func TestFastPreCheckAgreesWithTheValidator(t *testing.T) {
	for _, schema := range fastSchemas {
		c := compiled(t, schema)
		require.NotNil(t, c.fast, "in the subset: %s", schema)
		fastCount := 0
		for _, inst := range fastInstances {
			fast := c.fast.valid([]byte(inst))
			full := fullValid(c, []byte(inst))
			if fast {
				fastCount++
				assert.True(t, full, "pre-check accepted what the validator refuses\nschema %s\ninstance %s", schema, inst)
			}
		}
		assert.Positive(t, fastCount, "the pre-check accepts something: %s", schema)
	}
	for _, schema := range slowSchemas {
		assert.Nil(t, compiled(t, schema).fast, schema)
	}
}

func TestFastPreCheckCoversDerivedSchemas(t *testing.T) {
	type in struct {
		Message string   `json:"message" jsonschema:"minLength=1,maxLength=100,pattern=^\\S"`
		Count   *int     `json:"count,omitempty" jsonschema:"minimum=0,maximum=10"`
		Mode    string   `json:"mode,omitempty" jsonschema:"enum=fast,enum=slow"`
		Tags    []string `json:"tags,omitempty"`
		Leaf    *leaf    `json:"leaf"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[in](), reflect.TypeFor[Tree](), reflect.TypeFor[Page[leaf]]()} {
		s, err := deriveSchema(typ)
		require.NoError(t, err)
		c := compiled(t, string(s))
		assert.NotNil(t, c.fast, "%v: %s", typ, s)
	}
	c := compiled(t, mustDerive(t, reflect.TypeFor[in]()))
	assert.True(t, c.fast.valid([]byte(`{"message":"hi","count":3,"mode":"fast","tags":["a"],"leaf":null}`)))
	assert.False(t, c.fast.valid([]byte(`{"message":" hi","leaf":null}`)))
}

func mustDerive(t *testing.T, typ reflect.Type) string {
	s, err := deriveSchema(typ)
	require.NoError(t, err)
	return string(s)
}

// FuzzFastPreCheck checks the one property the pre-check must have: it never
// accepts a value the full validator refuses.
func FuzzFastPreCheck(f *testing.F) {
	for _, inst := range fastInstances {
		f.Add(inst)
	}
	var cs []*compiledSchema
	for _, s := range fastSchemas {
		cs = append(cs, compiled(f, s))
	}
	f.Fuzz(func(t *testing.T, inst string) {
		for i, c := range cs {
			if c.fast.valid([]byte(inst)) && !fullValid(c, []byte(inst)) {
				t.Fatalf("pre-check accepted what the validator refuses\nschema %s\ninstance %q", fastSchemas[i], inst)
			}
		}
	})
}
