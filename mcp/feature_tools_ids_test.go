package mcp_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// With keel's own NewID, a tools/call that names no correlation id gets
// a correlation id and a run id that are two distinct random UUIDs (made
// together: ids.NewUUIDPair).
func TestToolCallIDsWithTheDefaultNewID(t *testing.T) {
	tools := mcptest.NewTools(mcptest.ToolSlow)
	tools.SlowStarted, tools.SlowDone = make(chan *mcp.ToolCall, 1), make(chan error, 1)
	opts := mcptest.ServerOptions(tools)
	opts.NewID = nil
	c, end := connect(t, opts, nil)
	t.Cleanup(func() { _ = end() })
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { _, err := c.CallTool(ctx, mcptest.ToolSlow, nil); errc <- err }()

	call := recv(t, tools.SlowStarted, "the slow call")
	for _, id := range []string{call.CorrelationID, call.RunID} {
		u, err := uuid.Parse(id)
		require.NoError(t, err, id)
		assert.Equal(t, uuid.Version(4), u.Version())
		assert.Equal(t, u.String(), id)
	}
	assert.NotEqual(t, call.CorrelationID, call.RunID)
	cancel()
	require.Error(t, recv(t, errc, "CallTool"))
	recv(t, tools.SlowDone, "the handler's end")
}
