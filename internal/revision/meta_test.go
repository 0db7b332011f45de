package revision_test

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/revision"
)

// CheckMeta: the rules every 2026-07-28 request's _meta follows,
// which transports apply before routing (a bad logLevel is left to the
// server).
func TestCheckMeta(t *testing.T) {
	for _, tc := range []struct {
		params, version, errPart string
	}{
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`, "2026-07-28", ""},
		{`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}`, "2099-01-01", ""},
		{`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, "", "protocolVersion"},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}}`, "", "protocolVersion"},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, "", "clientCapabilities"},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`, "", "clientCapabilities"},
		{`{"_meta":null}`, "", "protocolVersion"},
		{`{"_meta":"x"}`, "", "_meta"},
		{`[]`, "", "needs params"},
	} {
		v, e := revision.CheckMeta([]byte(tc.params))
		if tc.errPart == "" {
			require.Nil(t, e, tc.params)
			assert.Equal(t, tc.version, v)
			continue
		}
		require.NotNil(t, e, tc.params)
		assert.Equal(t, int64(-32602), e.Code)
		assert.Contains(t, e.Message, tc.errPart, tc.params)
	}
}

// CorrelationID reads the string _meta.correlationId of a request's params
// (member names case-sensitive), and "" for anything else.
func TestCorrelationID(t *testing.T) {
	cases := []struct {
		name, params, want string
	}{
		{"no params", ``, ""},
		{"no _meta", `{"name":"x"}`, ""},
		{"a string", `{"_meta":{"correlationId":"abc"}}`, "abc"},
		{"beside the revision's keys", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","correlationId":"c-1"},"name":"x"}`, "c-1"},
		{"escaped", `{"_meta":{"correlationId":"a\u0062c"}}`, "abc"},
		{"not a string", `{"_meta":{"correlationId":7}}`, ""},
		{"outside _meta", `{"correlationId":"abc"}`, ""},
		{"case differs", `{"_meta":{"CorrelationId":"abc","correlationId":"x"}}`, "x"},
		{"malformed", `{"_meta":{"correlationId":"abc"`, ""},
		{"params not an object", `["correlationId"]`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, revision.CorrelationID(jsontext.Value(c.params)))
		})
	}
}

// Classify: unmarked params give the zero Reading; marked ones are checked
// as CheckMeta checks them, the members the server decodes are located,
// and Slow tells when the server must read _meta itself.
func TestClassify(t *testing.T) {
	const v, c = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientCapabilities":{"roots":{}}`
	for _, tc := range []struct {
		params               string
		marked, slow, refuse bool
		caps, info, level    string
	}{
		{params: `{"name":"x"}`},
		{params: `{"arguments":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`}, // not in _meta
		{params: `{"_meta":{` + v + `,` + c + `}}`, marked: true, caps: `{"roots":{}}`},
		{params: `{"_meta":{` + v + `,` + c + `,"io.modelcontextprotocol/clientInfo":{"name":"n"},"io.modelcontextprotocol/logLevel":"warning"}}`,
			marked: true, caps: `{"roots":{}}`, info: `{"name":"n"}`, level: "warning"},
		{params: `{"_meta":{` + v + `,` + c + `,"io.modelcontextprotocol/clientInfo":null,"io.modelcontextprotocol/logLevel":null}}`, marked: true, caps: `{"roots":{}}`},
		{params: `{"_meta":{` + v + `,` + c + `,"progressToken":1}}`, marked: true, slow: true, caps: `{"roots":{}}`},
		{params: `{"_meta":{` + v + `,` + c + `,"io.modelcontextprotocol/logLevel":2}}`, marked: true, slow: true, caps: `{"roots":{}}`},
		{params: `{"_meta":{` + v + `,` + c + `,"io.modelcontextprotocol/logLevel":"loud"}}`, marked: true, slow: true, caps: `{"roots":{}}`},
		{params: `{"_meta": { ` + v + ` , "io.modelcontextprotocol/clientCapabilities" : { } } }`, marked: true, caps: `{ }`},
		{params: `{"_meta":{"io.modelcontextprotocol/protocolVersion":7,` + c + `}}`, marked: true, slow: true, refuse: true, caps: `{"roots":{}}`},
		{params: `{"_meta":{` + v + `,"io.modelcontextprotocol/clientCapabilities":[]}}`, marked: true, slow: true, refuse: true, caps: `[]`},
		{params: `{"_meta":{` + v + `}}`, marked: true, refuse: true},
		{params: `{"_meta":"io.modelcontextprotocol/protocolVersion"}`, marked: true, slow: true, refuse: true},
		{params: `["io.modelcontextprotocol/protocolVersion"]`, marked: true, refuse: true},
	} {
		r := revision.Classify(jsontext.Value(tc.params))
		require.Equal(t, tc.marked, r.Marked, tc.params)
		if !tc.marked {
			assert.Zero(t, r, tc.params)
			continue
		}
		assert.Equal(t, tc.slow, r.Slow, tc.params)
		assert.Equal(t, tc.refuse, r.Refusal != nil, tc.params)
		v, refusal := revision.CheckMeta(jsontext.Value(tc.params))
		assert.Equal(t, refusal, r.Refusal, tc.params)
		assert.Equal(t, v, r.Version, tc.params)
		if !tc.refuse {
			assert.Equal(t, "2026-07-28", r.Version, tc.params)
		}
		assert.Equal(t, tc.caps, string(r.Caps.In([]byte(tc.params))), tc.params)
		assert.Equal(t, tc.info, string(r.Info.In([]byte(tc.params))), tc.params)
		assert.Equal(t, tc.level, r.LevelName(), tc.params)
	}
}
