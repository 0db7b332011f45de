package mcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readCommonCallTool reads the common tools/call params as the codec's
// arshaler (decodeCallTool) does, with the arguments left in params, and
// leaves every other params to decodeCallTool: those that are not the
// common shape, and those the strict decoder refuses, which
// decodeCallTool then refuses in its own words.
func TestReadCommonCallToolAgreesWithTheArshaler(t *testing.T) {
	meta := Meta{"k": "v"}
	for _, tc := range []struct {
		name, params string
		common       bool
	}{
		{"name and arguments", `{"name":"echo","arguments":{"message":"hi"},"_meta":{"x":1}}`, true},
		{"arguments first, spaces", ` { "arguments" : { "a" : [1, 2] } , "name" : "échø" } `, true},
		{"no arguments", `{"name":"echo"}`, true},
		{"empty name", `{"name":"","arguments":{}}`, true},
		{"no name", `{"arguments":{}}`, false},
		{"escaped name", `{"name":"ec\u0068o","arguments":{}}`, false},
		{"escaped member name", `{"n\u0061me":"echo","arguments":{}}`, false},
		{"null name", `{"name":null}`, false},
		{"number name", `{"name":5}`, false},
		{"null arguments", `{"name":"echo","arguments":null}`, false},
		{"array arguments", `{"name":"echo","arguments":[1]}`, false},
		{"task", `{"name":"echo","task":{"ttl":5}}`, false},
		{"requestState", `{"name":"echo","requestState":"s"}`, false},
		{"inputResponses", `{"name":"echo","inputResponses":{"a":{}}}`, false},
		{"another member", `{"name":"echo","other":1}`, false},
		{"duplicate name", `{"name":"echo","name":"other"}`, false},
		{"duplicate in arguments", `{"name":"echo","arguments":{"a":1,"a":2}}`, false},
		{"not an object", `["echo"]`, false},
		{"invalid UTF-8", "{\"name\":\"e\xffo\"}", false},
		{"data after the object", `{"name":"x"} junk`, false},
		{"a second brace", `{"name":"x"}}`, false},
		{"a second object", `{"name":"x"}{"name":"y"}`, false},
		{"a number after", `{"name":""}0`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := json.RawMessage(tc.params)
			var want CallToolParams
			werr := decodeCallTool(params, &want, true, meta)
			name, args, ok := readCommonCallTool(params)
			require.Equal(t, tc.common, ok)
			if !ok {
				return
			}
			require.NoError(t, werr)
			assert.Equal(t, want.Name, name)
			assert.Equal(t, string(want.Arguments), string(args))
			if args != nil {
				assert.GreaterOrEqual(t, indexOf(params, args), 0, "the bytes of params, not a copy")
			}
		})
	}
}

// indexOf returns where sub, a slice of b, starts in it; -1 when sub is
// not a slice of b.
func indexOf(b []byte, sub []byte) int {
	for i := range b {
		if &b[i] == &sub[0] {
			return i
		}
	}
	return -1
}

// FuzzReadCommonCallTool: whatever params the fast reader accepts, the
// arshaler (decodeCallTool) accepts too, with the same name and the same
// argument bytes.
func FuzzReadCommonCallTool(f *testing.F) {
	for _, seed := range []string{
		`{"name":"echo","arguments":{"message":"hi"},"_meta":{"x":1}}`,
		`{"name":"echo"}`, `{"name":""}0`, `{"name":"x"}}`, `{"arguments":{},"name":"a"}`,
		`{"name":"echo","name":"other"}`, "{\"name\":\"e\xffo\"}",
	} {
		f.Add(seed)
	}
	meta := Meta{"k": "v"}
	f.Fuzz(func(t *testing.T, params string) {
		name, args, ok := readCommonCallTool(json.RawMessage(params))
		if !ok {
			return
		}
		var want CallToolParams
		if err := decodeCallTool(json.RawMessage(params), &want, true, meta); err != nil {
			t.Fatalf("the fast reader accepted %q, which decodeCallTool refuses: %v", params, err)
		}
		if want.Name != name || string(want.Arguments) != string(args) {
			t.Fatalf("%q: fast (%q, %s) != arshaler (%q, %s)", params, name, args, want.Name, want.Arguments)
		}
	})
}
