//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// The same declared method on a 2025 session: the server asks the client
// itself (elicitation/create) and runs the handler again with the answer.
func TestCustomMethodInputRounds2025(t *testing.T) {
	copts := *quietClient
	asked := 0
	copts.OnElicitation = func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Grace"}}, nil
	}
	ct, wait := mcptest.StartServer(t, inputMethodOptions(), nil)
	c := mcp.NewClient(&copts) // no schema checks: the schema does not know acme/greet
	require.NoError(t, c.Connect(t.Context(), ct))
	t.Cleanup(func() { c.Close(); _ = wait() })
	var out map[string]any
	require.NoError(t, c.Call(context.Background(), "acme/greet", map[string]any{"greeting": "Hi"}, &out))
	assert.Equal(t, map[string]any{"text": "Hi, Grace", "state": "greet-1", "round": float64(0)}, out)
	assert.Equal(t, 1, asked)

	err := c.Call(context.Background(), "acme/nogreet", map[string]any{"greeting": "Hi"}, &out)
	var e *mcp.Error
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, int64(mcp.CodeInternalError), e.Code)
	assert.Equal(t, 1, asked, "an undeclared method asks nothing")
}
