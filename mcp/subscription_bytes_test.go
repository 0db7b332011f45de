package mcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// limitOf returns the error of answer m and the limit its data names.
func limitOf(t *testing.T, m map[string]any) (code float64, msg, limit string) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "want an error, got %v", m)
	data, _ := e["data"].(map[string]any)
	details, _ := data["details"].(map[string]any)
	limit, _ = details["limit"].(string)
	return e["code"].(float64), e["message"].(string), limit
}

// A listen's filter is bounded before anything of it is kept or echoed:
// entries by count (4096), each by MaxURIBytes, all by
// MaxSubscriptionBytes; a filter within the bounds is acknowledged.
func TestListenFilterBounded(t *testing.T) {
	o := modernOptions(&modernTools{})
	o.MaxURIBytes, o.MaxSubscriptionBytes = 1024, 8<<10
	c := startRaw(t, o)
	listen := func(id int, uris []string, tasks []string) map[string]any {
		f, err := json.Marshal(map[string]any{"resourceSubscriptions": uris, "taskIds": tasks})
		require.NoError(t, err)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":%s,%s}}`, id, f, modernMeta))
		return c.recv()
	}
	many := make([]string, 4097)
	for i := range many {
		many[i] = "test://r"
	}
	for _, tc := range []struct {
		name        string
		uris, tasks []string
		limit       string
	}{
		{"too many entries", many, nil, "maxSubscriptions"},
		{"a URI too long", []string{"test://" + strings.Repeat("u", 1100)}, nil, "MaxURIBytes"},
		{"a task id too long", nil, []string{strings.Repeat("t", 1100)}, "MaxURIBytes"},
		{"too many bytes", []string{"test://" + strings.Repeat("a", 1000), "test://" + strings.Repeat("b", 1000), "test://" + strings.Repeat("c", 1000),
			"test://" + strings.Repeat("d", 1000), "test://" + strings.Repeat("e", 1000), "test://" + strings.Repeat("f", 1000),
			"test://" + strings.Repeat("g", 1000), "test://" + strings.Repeat("h", 1000)}, nil, "MaxSubscriptionBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := listen(1, tc.uris, tc.tasks)
			code, msg, limit := limitOf(t, m)
			assert.Equal(t, float64(mcp.CodeInvalidParams), code)
			assert.Equal(t, tc.limit, limit)
			assert.Contains(t, msg, tc.limit)
			b, _ := json.Marshal(m)
			assert.Less(t, len(b), 1024, "the filter is not echoed")
		})
	}
	m := listen(2, []string{"test://r/1", "test://r/2"}, nil)
	assert.Equal(t, "notifications/subscriptions/acknowledged", m["method"])
}
