package revision_test

import (
	"testing"

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
