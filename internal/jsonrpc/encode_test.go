package jsonrpc

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type testContent struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

type testResult struct {
	Content []testContent  `json:"content"`
	Meta    map[string]any `json:"_meta,omitempty"`
	IsError bool           `json:"isError,omitzero"`
}

func TestAppend(t *testing.T) {
	echo := &testResult{Content: []testContent{{Type: "text", Text: "hi\nthere <&>"}}}
	tests := []struct {
		name string
		enc  func(dst []byte) ([]byte, error)
		want string
	}{
		{"response", func(d []byte) ([]byte, error) { return AppendResponse(d, jsontext.Value(`42`), echo) },
			`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hi\nthere <&>"}]}}`},
		{"response string id", func(d []byte) ([]byte, error) { return AppendResponse(d, jsontext.Value(`"a\"b"`), map[string]int{}) },
			`{"jsonrpc":"2.0","id":"a\"b","result":{}}`},
		{"response nil result", func(d []byte) ([]byte, error) { return AppendResponse(d, jsontext.Value(`1`), nil) },
			`{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"response raw result", func(d []byte) ([]byte, error) {
			return AppendResponse(d, jsontext.Value(`1`), jsontext.Value(`{"a":[1,2]}`))
		},
			`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}`},
		{"response multi-line raw result compacted", func(d []byte) ([]byte, error) {
			return AppendResponse(d, jsontext.Value(`1`), jsontext.Value("{\n  \"a\": [1, 2]\r\n}"))
		}, `{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}`},
		{"response map sorted", func(d []byte) ([]byte, error) {
			return AppendResponse(d, jsontext.Value(`1`), map[string]int{"b": 2, "a": 1, "c": 3})
		}, `{"jsonrpc":"2.0","id":1,"result":{"a":1,"b":2,"c":3}}`},
		{"error", func(d []byte) ([]byte, error) {
			return AppendError(d, jsontext.Value(`7`), CodeMethodNotFound, "Method not found", nil)
		},
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`},
		{"error null id with data", func(d []byte) ([]byte, error) {
			return AppendError(d, Null, CodeParseError, `Parse error: "x"`, map[string]string{"correlationId": "c-1"})
		}, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: \"x\"","data":{"correlationId":"c-1"}}}`},
		{"error invalid UTF-8 message replaced", func(d []byte) ([]byte, error) {
			return AppendError(d, nil, CodeInternalError, "bad \xff byte", nil)
		}, `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"bad ` + "\ufffd" + ` byte"}}`},
		{"request", func(d []byte) ([]byte, error) {
			return AppendRequest(d, jsontext.Value(`3`), "tools/call", map[string]any{"name": "echo", "arguments": map[string]string{"message": "hi"}})
		}, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"message":"hi"},"name":"echo"}}`},
		{"request no params", func(d []byte) ([]byte, error) { return AppendRequest(d, jsontext.Value(`"p1"`), "ping", nil) },
			`{"jsonrpc":"2.0","id":"p1","method":"ping"}`},
		{"notification", func(d []byte) ([]byte, error) {
			return AppendNotification(d, "notifications/progress", struct {
				Progress float64 `json:"progress"`
			}{0.5})
		}, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0.5}}`},
		{"notification no params", func(d []byte) ([]byte, error) { return AppendNotification(d, "notifications/initialized", nil) },
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.enc(nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, jsontext.Value(got).IsValid(), "valid JSON")
			assert.NotContains(t, string(got), "\n", "one line")

			// Appends after what dst holds.
			got, err = tt.enc([]byte("prefix"))
			require.NoError(t, err)
			assert.Equal(t, "prefix"+tt.want, string(got))

			// Decodes back to a message of the expected kind.
			m, derr := Decode(got[len("prefix"):], 0)
			require.Nil(t, derr)
			assert.NotZero(t, m.Kind)
		})
	}
}

// TestAppendMemberOrder checks the envelope order jsonrpc, id, then
// result/error/method, params.
func TestAppendMemberOrder(t *testing.T) {
	names := func(b []byte) []string {
		dec := jsontext.NewDecoder(bytes.NewReader(b))
		_, err := dec.ReadToken()
		require.NoError(t, err)
		var out []string
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			require.NoError(t, err)
			out = append(out, tok.String())
			require.NoError(t, dec.SkipValue())
		}
		return out
	}
	b, err := AppendResponse(nil, jsontext.Value(`1`), map[string]int{"id": 9})
	require.NoError(t, err)
	assert.Equal(t, []string{"jsonrpc", "id", "result"}, names(b))
	b, err = AppendError(nil, jsontext.Value(`1`), 1, "m", []int{1})
	require.NoError(t, err)
	assert.Equal(t, []string{"jsonrpc", "id", "error"}, names(b))
	b, err = AppendRequest(nil, jsontext.Value(`1`), "m", []int{1})
	require.NoError(t, err)
	assert.Equal(t, []string{"jsonrpc", "id", "method", "params"}, names(b))
	b, err = AppendNotification(nil, "m", []int{1})
	require.NoError(t, err)
	assert.Equal(t, []string{"jsonrpc", "method", "params"}, names(b))
}

func TestAppendErrors(t *testing.T) {
	prefix := []byte("keep")
	tests := []struct {
		name string
		enc  func(dst []byte) ([]byte, error)
	}{
		{"response unencodable result", func(d []byte) ([]byte, error) { return AppendResponse(d, jsontext.Value(`1`), make(chan int)) }},
		{"response invalid UTF-8 in result", func(d []byte) ([]byte, error) { return AppendResponse(d, jsontext.Value(`1`), "\xff") }},
		{"response invalid raw result", func(d []byte) ([]byte, error) {
			return AppendResponse(d, jsontext.Value(`1`), jsontext.Value("{\n"))
		}},
		{"error unencodable data", func(d []byte) ([]byte, error) { return AppendError(d, nil, 1, "m", func() {}) }},
		{"request unencodable params", func(d []byte) ([]byte, error) { return AppendRequest(d, jsontext.Value(`1`), "m", make(chan int)) }},
		{"request invalid UTF-8 method", func(d []byte) ([]byte, error) { return AppendRequest(d, jsontext.Value(`1`), "m\xff", nil) }},
		{"notification unencodable params", func(d []byte) ([]byte, error) { return AppendNotification(d, "m", make(chan int)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.enc(prefix)
			require.Error(t, err)
			assert.Equal(t, "keep", string(got), "dst returned unchanged")
		})
	}
	// The codec's errors stay matchable.
	_, err := AppendResponse(nil, jsontext.Value(`1`), make(chan int))
	var se *json.SemanticError
	assert.ErrorAs(t, err, &se)
}

func TestAppendNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	res := &testResult{Content: []testContent{{Type: "text", Text: "hello, world"}}}
	id := jsontext.Value(`42`)
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		if buf, err = AppendResponse(buf[:0], id, res); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkAppendResponse(b *testing.B) {
	res := &testResult{Content: []testContent{{Type: "text", Text: "hello, world"}}}
	id := jsontext.Value(`42`)
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendResponse(buf[:0], id, res); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendError(b *testing.B) {
	id := jsontext.Value(`42`)
	data := map[string]string{"correlationId": "0b5e2c55-55f1-4a4c-9b38-4f3c9c1e3f7a"}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendError(buf[:0], id, CodeInvalidParams, "Invalid params", data); err != nil {
			b.Fatal(err)
		}
	}
}
