package jsonrpc

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeCase is one line and what Decode must make of it: either a message
// (kind != 0) or a DecodeError with code and id.
type decodeCase struct {
	name string
	in   string
	// success
	kind   Kind
	id     string // raw id, "" when absent
	method string
	params string
	result string
	errObj *WireError
	// failure
	code    int64
	errID   string // raw id of the DecodeError
	errText string // substring of the DecodeError message
}

// decodeCases covers every category of mcpperf's malformed mode (first
// block, in its order) and keel's strictness rules.
var decodeCases = []decodeCase{
	// mcpdrive -mode malformed categories.
	{name: "not_json", in: "this is not json", code: CodeParseError, errID: "null"},
	{name: "truncated_object", in: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"`, code: CodeParseError, errID: "null"},
	{name: "bare_word_value", in: `{"jsonrpc":"2.0","id":8,"method":ping}`, code: CodeParseError, errID: "null"},
	{name: "unbalanced", in: `}{`, code: CodeParseError, errID: "null"},
	{name: "control_bytes", in: "\x01\x02garbage\x7f", code: CodeParseError, errID: "null"},
	{name: "single_quotes", in: `{'jsonrpc':'2.0','id':9,'method':'ping'}`, code: CodeParseError, errID: "null"},
	{name: "empty_object", in: `{}`, code: CodeInvalidRequest, errID: "null", errText: `missing "jsonrpc"`},
	{name: "number", in: `42`, code: CodeInvalidRequest, errID: "null"},
	{name: "string", in: `"hello"`, code: CodeInvalidRequest, errID: "null"},
	{name: "null", in: `null`, code: CodeInvalidRequest, errID: "null"},
	{name: "empty_array via Decode", in: `[]`, code: CodeInvalidRequest, errID: "null"},
	{name: "missing_jsonrpc", in: `{"id":"bad-3","method":"ping"}`, code: CodeInvalidRequest, errID: `"bad-3"`, errText: `missing "jsonrpc"`},
	{name: "wrong_jsonrpc_version", in: `{"jsonrpc":"1.0","id":"bad-4","method":"ping"}`, code: CodeInvalidRequest, errID: `"bad-4"`, errText: `"2.0"`},
	{name: "method_not_string", in: `{"jsonrpc":"2.0","id":"bad-5","method":42}`, code: CodeInvalidRequest, errID: `"bad-5"`, errText: "method must be a string"},
	{name: "id_object", in: `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, code: CodeInvalidRequest, errID: "null", errText: "id must be"},

	// Well-formed messages.
	{name: "request", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		kind: KindRequest, id: `1`, method: "tools/call", params: `{"name":"echo"}`},
	{name: "request string id", in: `{"jsonrpc":"2.0","id":"a-1","method":"ping"}`, kind: KindRequest, id: `"a-1"`, method: "ping"},
	{name: "request negative id", in: `{"jsonrpc":"2.0","id":-7,"method":"ping"}`, kind: KindRequest, id: `-7`, method: "ping"},
	{name: "request members reordered", in: `{"params":{},"method":"ping","id":2,"jsonrpc":"2.0"}`, kind: KindRequest, id: `2`, method: "ping", params: `{}`},
	{name: "request surrounding space", in: " \t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n", kind: KindRequest, id: `1`, method: "ping"},
	{name: "request array params", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}`, kind: KindRequest, id: `1`, method: "m", params: `[1,2]`},
	{name: "request escaped method", in: `{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, kind: KindRequest, id: `1`, method: "tools/call"},
	{name: "request escaped member name", in: `{"jsonrpc":"2.0","id":1,"\u006dethod":"ping"}`, kind: KindRequest, id: `1`, method: "ping"},
	{name: "request escaped version", in: `{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`, kind: KindRequest, id: `1`, method: "ping"},
	{name: "request unknown members ignored", in: `{"jsonrpc":"2.0","id":1,"method":"ping","extra":{"a":[1]}}`, kind: KindRequest, id: `1`, method: "ping"},
	{name: "notification", in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: KindNotification, method: "notifications/initialized"},
	{name: "notification with params", in: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		kind: KindNotification, method: "notifications/progress", params: `{"progress":1}`},
	{name: "response", in: `{"jsonrpc":"2.0","id":3,"result":{"ok":true}}`, kind: KindResponse, id: `3`, result: `{"ok":true}`},
	{name: "response null result", in: `{"jsonrpc":"2.0","id":3,"result":null}`, kind: KindResponse, id: `3`, result: `null`},
	{name: "error response", in: `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found","data":{"m":"x"}}}`,
		kind: KindResponse, id: `"x"`, errObj: &WireError{Code: -32601, Message: "Method not found", Data: jsontext.Value(`{"m":"x"}`)}},
	{name: "error response id null", in: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		kind: KindResponse, errObj: &WireError{Code: -32700, Message: "Parse error"}},

	// Ids.
	{name: "id null request", in: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: CodeInvalidRequest, errID: "null", errText: "id must be"},
	{name: "id fractional", in: `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, code: CodeInvalidRequest, errID: "null", errText: "id must be"},
	{name: "id exponent", in: `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, code: CodeInvalidRequest, errID: "null", errText: "id must be"},
	{name: "id bool", in: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, code: CodeInvalidRequest, errID: "null", errText: "id must be"},
	{name: "id array", in: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, code: CodeInvalidRequest, errID: "null", errText: "id must be"},
	{name: "id null response result", in: `{"jsonrpc":"2.0","id":null,"result":{}}`, code: CodeInvalidRequest, errID: "null", errText: "id must be"},
	{name: "bad id and missing jsonrpc", in: `{"id":{},"method":"ping"}`, code: CodeInvalidRequest, errID: "null"},

	// Strictness.
	{name: "duplicate top-level member", in: `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, code: CodeParseError, errID: "null", errText: "duplicate"},
	{name: "duplicate id", in: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, code: CodeParseError, errID: "null", errText: "duplicate"},
	{name: "duplicate nested in params", in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, code: CodeParseError, errID: "null", errText: "duplicate"},
	{name: "duplicate deeply nested", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[{"x":1,"x":2}]}}`, code: CodeParseError, errID: "null", errText: "duplicate"},
	{name: "duplicate via escape", in: `{"jsonrpc":"2.0","id":1,"method":"ping","\u006dethod":"x"}`, code: CodeParseError, errID: "null", errText: "duplicate"},
	{name: "case variant Method", in: `{"jsonrpc":"2.0","id":1,"Method":"ping"}`, code: CodeInvalidRequest, errID: "1", errText: `missing "method"`},
	{name: "case variant ID", in: `{"jsonrpc":"2.0","ID":1,"method":"ping"}`, kind: KindNotification, method: "ping"},
	{name: "case variant ID and Method", in: `{"jsonrpc":"2.0","ID":1,"Method":"ping"}`, code: CodeInvalidRequest, errID: "null", errText: `missing "method"`},
	{name: "case variant JSONRPC", in: `{"JSONRPC":"2.0","id":1,"method":"ping"}`, code: CodeInvalidRequest, errID: "1", errText: `missing "jsonrpc"`},
	{name: "case variant smuggled next to real", in: `{"jsonrpc":"2.0","id":1,"method":"ping","METHOD":"tools/call"}`, kind: KindRequest, id: "1", method: "ping"},
	{name: "invalid UTF-8 in string", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}", code: CodeParseError, errID: "null"},
	{name: "invalid UTF-8 in params", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\xc3\x28\"}}", code: CodeParseError, errID: "null"},
	{name: "invalid UTF-8 in member name", in: "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"\xed\xa0\x80\":1}}", code: CodeParseError, errID: "null"},
	{name: "invalid UTF-8 scalar", in: "\"\xff\"", code: CodeParseError, errID: "null"},
	{name: "lone surrogate escape", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\ud800"}}`, code: CodeParseError, errID: "null"},
	{name: "depth bound exceeded", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth) + `}`,
		code: CodeParseError, errID: "null", errText: "MaxDepth (64)"},
	{name: "depth at bound", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", DefaultMaxDepth-1) + strings.Repeat("]", DefaultMaxDepth-1) + `}`,
		kind: KindRequest, id: "1", method: "m", params: strings.Repeat("[", DefaultMaxDepth-1) + strings.Repeat("]", DefaultMaxDepth-1)},
	{name: "brackets in strings do not count", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + strings.Repeat(`[{\"`, 100) + `"}}`,
		kind: KindRequest, id: "1", method: "m", params: `{"s":"` + strings.Repeat(`[{\"`, 100) + `"}`},
	{name: "trailing garbage", in: `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, code: CodeParseError, errID: "null"},
	{name: "two objects", in: `{"jsonrpc":"2.0","id":1,"method":"ping"}{}`, code: CodeParseError, errID: "null"},
	{name: "empty input", in: ``, code: CodeParseError, errID: "null"},
	{name: "whitespace only", in: " \t ", code: CodeParseError, errID: "null"},

	// Shape.
	{name: "result and error", in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, code: CodeInvalidRequest, errID: "1", errText: "both result and error"},
	{name: "request with result", in: `{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, code: CodeInvalidRequest, errID: "1"},
	{name: "params scalar", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":5}`, code: CodeInvalidRequest, errID: "1", errText: "params"},
	{name: "params string", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}`, code: CodeInvalidRequest, errID: "1", errText: "params"},
	{name: "params null", in: `{"jsonrpc":"2.0","id":1,"method":"m","params":null}`, code: CodeInvalidRequest, errID: "1", errText: "params"},
	{name: "method null", in: `{"jsonrpc":"2.0","id":1,"method":null}`, code: CodeInvalidRequest, errID: "1", errText: "method must be a string"},
	{name: "jsonrpc number", in: `{"jsonrpc":2.0,"id":1,"method":"ping"}`, code: CodeInvalidRequest, errID: "1", errText: `"2.0"`},
	{name: "error object malformed", in: `{"jsonrpc":"2.0","id":1,"error":"boom"}`, code: CodeInvalidRequest, errID: "1", errText: "error object"},
	{name: "error code fractional", in: `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`, code: CodeInvalidRequest, errID: "1", errText: "error object"},
}

func TestDecode(t *testing.T) {
	for _, tt := range decodeCases {
		t.Run(tt.name, func(t *testing.T) {
			m, derr := Decode([]byte(tt.in), 0)
			if tt.kind == 0 {
				require.NotNil(t, derr, "want error %d, got %+v", tt.code, m)
				assert.Equal(t, tt.code, derr.Code, derr.Message)
				assert.Equal(t, tt.errID, string(derr.ID))
				assert.Contains(t, derr.Message, tt.errText)
				assert.Contains(t, derr.Error(), derr.Message)
				if tt.code == CodeParseError {
					assert.True(t, strings.HasPrefix(derr.Message, "Parse error"), derr.Message)
				} else {
					assert.True(t, strings.HasPrefix(derr.Message, "Invalid Request"), derr.Message)
				}
				return
			}
			require.Nil(t, derr, "%v", derr)
			assert.Equal(t, tt.kind, m.Kind)
			assert.Equal(t, tt.id, string(m.ID))
			assert.Equal(t, tt.method, m.Method)
			assert.Equal(t, tt.params, string(m.Params))
			assert.Equal(t, tt.result, string(m.Result))
			assert.Equal(t, tt.errObj, m.Error)
			if tt.id == "" {
				assert.Nil(t, m.ID)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	long := strings.Repeat("é", 1000)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"trailing value", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, "Parse error: invalid data after top-level value"},
		{"pointer names the member", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,}}`, "/params/a"},
		{"long member name truncated", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"` + long + `":1,"` + long + `":2}}`, "Parse error: duplicate object member name at /params/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, derr := Decode([]byte(tt.in), 0)
			require.NotNil(t, derr)
			assert.Equal(t, int64(CodeParseError), derr.Code)
			assert.Contains(t, derr.Message, tt.want)
			assert.LessOrEqual(t, len(derr.Message), maxParseErrorMessage+3)
			assert.True(t, utf8.ValidString(derr.Message))
		})
	}
}

func TestDecodeMaxDepth(t *testing.T) {
	in := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"b":{}}}}`)
	_, derr := Decode(in, 4)
	require.Nil(t, derr)
	_, derr = Decode(in, 3)
	require.NotNil(t, derr)
	assert.Equal(t, int64(CodeParseError), derr.Code)
	assert.Contains(t, derr.Message, "MaxDepth (3)")
	assert.Equal(t, "null", string(derr.ID))
}

func TestCheckDepth(t *testing.T) {
	tests := []struct {
		in    string
		max   int
		error bool
	}{
		{`[]`, 1, false},
		{`[[]]`, 1, true},
		{`{"a":[{}]}`, 3, false},
		{`{"a":[{}]}`, 2, true},
		{`["[[[[", "\"[[[["]`, 1, false},
		{`"\\"`, 1, false},
		{`["\\", []]`, 1, true},
		{strings.Repeat("[", 64), 0, false},
		{strings.Repeat("[", 65), 0, true},
		{`]]]]]][`, 1, false},
		// More openings than the limit, none nested deeper than it.
		{`{"a":{},"b":{},"c":[]}`, 2, false},
		{`[[],[],[[]]]`, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			derr := CheckDepth([]byte(tt.in), tt.max)
			if tt.error {
				require.NotNil(t, derr)
				assert.Equal(t, int64(CodeParseError), derr.Code)
			} else {
				assert.Nil(t, derr)
			}
		})
	}
}

func TestDecodeCopies(t *testing.T) {
	in := []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	m, derr := Decode(in, 0)
	require.Nil(t, derr)
	for i := range in {
		in[i] = 'X'
	}
	assert.Equal(t, `"abc"`, string(m.ID))
	assert.Equal(t, "tools/call", m.Method)
	assert.Equal(t, `{"name":"echo","arguments":{"message":"hi"}}`, string(m.Params))

	resp := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	m, derr = Decode(resp, 0)
	require.Nil(t, derr)
	clear(resp)
	assert.Equal(t, `7`, string(m.ID))
	assert.Equal(t, `{"content":[]}`, string(m.Result))

	errResp := []byte(`{"jsonrpc":"2.0","id":8,"error":{"code":-1,"message":"m","data":[1]}}`)
	m, derr = Decode(errResp, 0)
	require.Nil(t, derr)
	clear(errResp)
	assert.Equal(t, &WireError{Code: -1, Message: "m", Data: jsontext.Value(`[1]`)}, m.Error)

	bad := []byte(`{"id":"echo-me","method":"ping"}`)
	_, derr = Decode(bad, 0)
	require.NotNil(t, derr)
	clear(bad)
	assert.Equal(t, `"echo-me"`, string(derr.ID))
}

func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	line := []byte(toolsCallLine)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, derr := Decode(line, 0); derr != nil {
			t.Fatal(derr)
		}
	})
	assert.Equal(t, 1.0, allocs, "one copy of id and params")
}

func TestIsBatch(t *testing.T) {
	for in, want := range map[string]bool{
		`[]`: true, ` [1]`: true, "\r\n[{}]": true,
		`{}`: false, `"["`: false, ``: false, `  `: false,
	} {
		assert.Equal(t, want, IsBatch([]byte(in)), in)
	}
}

func TestSplitBatch(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  []string
		code  int64
		errID string
	}{
		{name: "empty_array", in: `[]`, code: CodeInvalidRequest, errID: "null"},
		{name: "empty array with space", in: ` [ ] `, code: CodeInvalidRequest, errID: "null"},
		{name: "two requests", in: `[{"jsonrpc":"2.0","id":1,"method":"a"}, {"jsonrpc":"2.0","method":"b"}]`,
			want: []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","method":"b"}`}},
		{name: "scalars kept for per-element errors", in: `[1,"x",null]`, want: []string{`1`, `"x"`, `null`}},
		{name: "truncated", in: `[{"jsonrpc":"2.0"`, code: CodeParseError, errID: "null"},
		{name: "duplicate inside element", in: `[{"a":1,"a":2}]`, code: CodeParseError, errID: "null"},
		{name: "invalid UTF-8", in: "[\"\xff\"]", code: CodeParseError, errID: "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			elems, derr := SplitBatch(in)
			if tt.code != 0 {
				require.NotNil(t, derr)
				assert.Equal(t, tt.code, derr.Code)
				assert.Equal(t, tt.errID, string(derr.ID))
				return
			}
			require.Nil(t, derr)
			clear(in) // elements are copies
			var got []string
			for _, e := range elems {
				got = append(got, string(e))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// FuzzDecode checks Decode's contract on arbitrary input: it never panics
// and returns either a consistent Message or a DecodeError with a JSON-RPC
// code and an id the error may be sent to.
func FuzzDecode(f *testing.F) {
	for _, tt := range decodeCases {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(nil), data...)
		m, derr := Decode(in, 0)
		if derr != nil {
			if derr.Code != CodeParseError && derr.Code != CodeInvalidRequest {
				t.Fatalf("code %d", derr.Code)
			}
			if string(derr.ID) != "null" && !validID(derr.ID) {
				t.Fatalf("error id %q", derr.ID)
			}
			if derr.Message == "" {
				t.Fatal("empty message")
			}
			return
		}
		switch m.Kind {
		case KindRequest:
			if !validID(m.ID) || m.Result != nil || m.Error != nil {
				t.Fatalf("request %+v", m)
			}
		case KindNotification:
			if m.ID != nil || m.Result != nil || m.Error != nil {
				t.Fatalf("notification %+v", m)
			}
		case KindResponse:
			if (m.ID != nil && !validID(m.ID)) || (m.Result == nil) == (m.Error == nil) || m.Method != "" {
				t.Fatalf("response %+v", m)
			}
		default:
			t.Fatalf("kind %d", m.Kind)
		}
		if m.Params != nil && !m.Params.IsValid() {
			t.Fatalf("params %q", m.Params)
		}
		if m.Result != nil && !m.Result.IsValid() {
			t.Fatalf("result %q", m.Result)
		}
		// A valid message is valid JSON, and the members are copies.
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		clear(in)
		m2, derr2 := Decode(data, 0)
		if derr2 != nil || string(m2.ID) != string(m.ID) || m2.Method != m.Method ||
			string(m2.Params) != string(m.Params) || string(m2.Result) != string(m.Result) {
			t.Fatalf("not stable: %+v vs %+v (%v)", m, m2, derr2)
		}
	})
}

const toolsCallLine = `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello, world"},"_meta":{"progressToken":"p-42"}}}`

func BenchmarkDecodeToolsCall(b *testing.B) {
	line := []byte(toolsCallLine)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		m, derr := Decode(line, 0)
		if derr != nil || m.Kind != KindRequest {
			b.Fatal(derr)
		}
	}
}

func BenchmarkDecodeResponse(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hello, world"}]}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		m, derr := Decode(line, 0)
		if derr != nil || m.Kind != KindResponse {
			b.Fatal(derr)
		}
	}
}

// MembersOfValid stops once every name is found: what follows is not read
// again (here, to show it, what follows is not even JSON).
func TestMembersOfValidStopsEarly(t *testing.T) {
	names := []string{"name", "arguments"}
	data := []byte(`{"arguments":{"a":1},"x":[true],"name":"echo",!!`)
	out := make([]jsontext.Value, len(names))
	require.NoError(t, MembersOfValid(data, names, out))
	assert.Equal(t, []jsontext.Value{jsontext.Value(`"echo"`), jsontext.Value(`{"a":1}`)}, out)
	require.Error(t, Members(data, names, make([]jsontext.Value, len(names))))
	// Only an object has members, even when the names are found early.
	require.Error(t, MembersOfValid([]byte(`["name","x","arguments",{}]`), names, out))
}

func TestMembers(t *testing.T) {
	names := []string{"name", "arguments", "uri"}
	for _, tc := range []struct {
		in      string
		want    []string // "" : absent
		wantErr bool
	}{
		{in: `{"name":"echo","arguments":{"a":[1,2]},"other":true}`, want: []string{`"echo"`, `{"a":[1,2]}`, ""}},
		{in: ` { "uri" : "file:///x" , "name":null } `, want: []string{`null`, "", `"file:///x"`}},
		{in: `{"n\u0061me":"escaped"}`, want: []string{`"escaped"`, "", ""}},
		{in: `{"Name":"case","NAME":1}`, want: []string{"", "", ""}},
		{in: `{}`, want: []string{"", "", ""}},
		{in: `{"name":1,"name":2}`, wantErr: true},
		{in: `["name"]`, wantErr: true},
		{in: `{"name":`, wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			data := []byte(tc.in)
			out := make([]jsontext.Value, len(names))
			err := Members(data, names, out)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			// Valid data: MembersOfValid finds the same.
			valid := make([]jsontext.Value, len(names))
			require.NoError(t, MembersOfValid(data, names, valid))
			assert.Equal(t, out, valid)
			for i, w := range tc.want {
				if w == "" {
					assert.Nil(t, out[i], names[i])
					continue
				}
				assert.Equal(t, w, string(out[i]), names[i])
				// A slice of data itself, not a copy.
				off := bytes.Index(data, out[i])
				require.GreaterOrEqual(t, off, 0)
				assert.Same(t, &data[off], &out[i][0], names[i])
			}
		})
	}
}

// DecodeOwned reads every message as Decode does, and keeps slices of the
// message itself instead of copies.
func TestDecodeOwned(t *testing.T) {
	for _, tt := range decodeCases {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.in)
			want, wantErr := Decode([]byte(tt.in), 0)
			got, gotErr := DecodeOwned(data, 0)
			require.Equal(t, wantErr, gotErr)
			assert.Equal(t, want, got)
			for _, v := range [][]byte{got.ID, got.Params, got.Result} {
				if len(v) == 0 {
					continue
				}
				off := bytes.Index(data, v)
				require.GreaterOrEqual(t, off, 0)
				assert.Same(t, &data[off], &v[0], "a slice of the message, not a copy")
				assert.Equal(t, len(v), cap(v), "capped: an append cannot write into the message")
			}
		})
	}
}

// WithDecoder's pooled decoder is reset once per use, after it: a use
// that stopped halfway leaves nothing to the next, which reads its own
// data from the start (offsets index it), and the decoder returned keeps
// no reference to the data it read.
func TestWithDecoderResetsOncePerUse(t *testing.T) {
	var dec *jsontext.Decoder
	stop := assert.AnError
	for range 3 { // decoders come back from the pool (or are new)
		err := WithDecoder([]byte(`{"a":[1,2`), func(d *jsontext.Decoder) error {
			dec = d
			_, err := d.ReadToken()
			require.NoError(t, err)
			return stop
		})
		require.ErrorIs(t, err, stop)
		assert.Zero(t, dec.InputOffset())
		assert.Empty(t, dec.UnreadBuffer(), "no reference to the data read")

		data := []byte(` {"b":"x"}`)
		err = WithDecoder(data, func(d *jsontext.Decoder) error {
			dec = d
			v, err := d.ReadValue()
			require.NoError(t, err)
			assert.Equal(t, `{"b":"x"}`, string(v))
			assert.Equal(t, int64(len(data)), d.InputOffset())
			_, err = d.ReadToken()
			assert.ErrorIs(t, err, io.EOF)
			return nil
		})
		require.NoError(t, err)
		assert.Empty(t, dec.UnreadBuffer())
	}
}

// A decoder reset before the codec's options last changed (a package
// registered its arshalers after it was pooled) is reset with the
// current ones before its next use.
func TestDecoderReadyTakesCurrentOptions(t *testing.T) {
	d := &decoder{gen: optionsGen - 1}
	d.dec.Reset(&d.src) // no options
	_, ok := json.GetOption(d.dec.Options(), json.Deterministic)
	require.False(t, ok)
	d.ready()
	assert.Equal(t, optionsGen, d.gen)
	det, ok := json.GetOption(d.dec.Options(), json.Deterministic)
	assert.True(t, ok && det, "the codec's options")
}
