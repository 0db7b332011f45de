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
