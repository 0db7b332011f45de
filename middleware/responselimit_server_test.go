package middleware

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// End to end: an oversized result becomes an isError RESOURCE_EXHAUSTED
// result naming the limit; the audit records it; the connection and the
// server carry on.
func TestServerResponseLimits(t *testing.T) {
	reg := registry.New(nil)
	type rowsOut struct {
		Rows []string `json:"rows"`
	}
	registry.MustRegister(reg, "rows", "Returns n rows.", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (rowsOut, error) {
		out := rowsOut{Rows: make([]string, in.N)}
		for i := range out.Rows {
			out.Rows[i] = "row " + strconv.Itoa(i)
		}
		return out, nil
	}, nil)
	sink := &memSink{}
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
		Tools: Standard(reg, &StandardOptions{AuditSink: sink, MaxResponseBytes: 64 << 10})})
	ct, st := transport.NewPipe(nil)
	ctx := context.Background()
	go func() { _ = srv.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: testProtocolVersion, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, c.Connect(ctx, ct))
	defer c.Close()

	for _, tc := range []struct {
		n     int
		limit string
	}{
		{10, ""},
		{DefaultMaxArrayItems + 1, "maxArrayItems"},
		{900, ""},
		{5000 - 1, "maxArrayItems"},
	} {
		res, err := c.CallTool(ctx, "rows", map[string]int{"n": tc.n})
		if tc.limit == "" {
			require.NoError(t, err, "n=%d", tc.n)
			assert.False(t, res.IsError)
			continue
		}
		var se *mcp.StructuredError
		require.ErrorAs(t, err, &se, "n=%d", tc.n)
		assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
		assert.Equal(t, tc.limit, se.Details["limit"])
		assert.Equal(t, "/structuredContent/rows", se.Details["path"])
		require.NotNil(t, res)
		assert.True(t, res.IsError)
	}
	// Under the item limit but over the byte limit.
	registry.MustRegister(reg, "blob", "Returns a big text.", func(context.Context, struct{}) (string, error) {
		return strings.Repeat("b", 100<<10), nil
	}, nil)
	_, err := c.CallTool(ctx, "blob", nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "maxResponseBytes", se.Details["limit"])
	assert.EqualValues(t, 64<<10, se.Details["maxResponseBytes"])

	res, err := c.CallTool(ctx, "rows", map[string]int{"n": 1})
	require.NoError(t, err, "the connection lives on")
	assert.False(t, res.IsError)
	_, exits := sink.events()
	var limited int
	for _, ev := range exits {
		if se, ok := ev.Err.(*mcp.StructuredError); ok && se.Code == mcp.ErrResourceExhausted {
			assert.Equal(t, OutcomeToolError, ev.Outcome)
			limited++
		}
	}
	assert.Equal(t, 3, limited, "the audit records what the client got")
}
