package stdjsontest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type (
	plain struct {
		A string   `json:"a"`
		B []string `json:"b,omitempty"`
	}
	nilList struct {
		L []int `json:"l"`
	} // keel writes [], encoding/json null
	zeroCount struct {
		N int `json:"n,omitempty"`
	} // keel writes 0, encoding/json nothing
	loose struct {
		Name string `json:"name"`
	}
)

// A duplicate member is refused by keel and taken by encoding/json.
func (l *loose) UnmarshalJSON(b []byte) error {
	type fields loose
	return json.Unmarshal(b, (*fields)(l))
}

// Compare finds each kind of difference it is there to find, and none where
// the codecs agree.
func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		diff string // a part of the error; "" for none
	}{
		{"the same bytes and values", plain{A: "x<y", B: []string{"b"}}, ""},
		{"a nil slice", nilList{}, "encoding/json writes"},
		{"omitempty on a number", zeroCount{}, "encoding/json writes"},
		{"a filled value of a good type", Filled[plain](nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Compare(tc.v)
			if tc.diff == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.diff)
		})
	}
}

// Filled sets every exported field, through pointers, slices and maps.
func TestFilled(t *testing.T) {
	type inner struct{ N *int }
	type outer struct {
		S  string
		P  *inner
		M  map[string]inner
		L  []inner
		R  json.RawMessage
		I  any
		no string
	}
	v := Filled[outer](map[reflect.Type]any{reflect.TypeFor[string](): "fixed"})
	assert.Equal(t, "fixed", v.S)
	require.NotNil(t, v.P)
	require.NotNil(t, v.P.N)
	assert.Len(t, v.M, 1)
	assert.Len(t, v.L, 1)
	assert.JSONEq(t, `{"a":[1,"x"]}`, string(v.R))
	assert.Equal(t, "v", v.I)
	assert.Empty(t, v.no)
}

// WireTypes lists the tagged struct types and the types with marshalWire of
// a package, and nothing else.
func TestWireTypes(t *testing.T) {
	assert.Equal(t, []string{"Annotations", "CallToolResult", "Content"}, filterNames(WireTypes(t, "../../mcp"), "Annotations", "CallToolResult", "Content", "Client", "Server"))
}

func filterNames(names []string, keep ...string) []string {
	var out []string
	for _, n := range names {
		for _, k := range keep {
			if n == k {
				out = append(out, n)
			}
		}
	}
	return out
}
