package mcp_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// A client cannot open subscriptions without bound: over
// MaxListensPerClient (or MaxListens in total) a listen is refused with a
// RESOURCE_EXHAUSTED error naming the limit, and a slot comes back when a
// subscription ends.
func TestListenLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perClient int
		total     int
		limit     string
	}{
		{"per client", 2, 100, "MaxListensPerClient"},
		{"total", 100, 2, "MaxListens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := modernOptions(&modernTools{})
			o.MaxListensPerClient, o.MaxListens = tc.perClient, tc.total
			c := startRaw(t, o)
			listen := func(id int) map[string]any {
				c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{},%s}}`, id, modernMeta))
				return c.recv()
			}
			for id := 1; id <= 2; id++ {
				require.Equal(t, "notifications/subscriptions/acknowledged", listen(id)["method"])
			}
			m := listen(3)
			e := m["error"].(map[string]any)
			assert.Equal(t, float64(mcp.CodeServerBusy), e["code"])
			assert.Contains(t, e["message"], tc.limit)
			data := e["data"].(map[string]any)
			assert.Equal(t, "RESOURCE_EXHAUSTED", data["code"])
			assert.Equal(t, tc.limit, data["details"].(map[string]any)["limit"])
			// ending one subscription frees its place
			c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
			for {
				m := c.recv()
				if m["method"] == "notifications/cancelled" { // after its final answer (stdio and memory)
					break
				}
			}
			assert.Equal(t, "notifications/subscriptions/acknowledged", listen(4)["method"])
		})
	}
}
