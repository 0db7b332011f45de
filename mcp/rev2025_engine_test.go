//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// A legacy session is served the same handler: the server asks the client
// itself and runs the handler again.
func TestLegacyBridgeAsksTheClient(t *testing.T) {
	copts := *quietClient
	copts.OnElicitation = func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Grace"}}, nil
	}
	c, _ := connect(t, modernOptions(&modernTools{}), &copts)
	res, err := c.CallTool(context.Background(), "ask", nil)
	require.NoError(t, err)
	assert.Equal(t, "Hello, Grace! state=asked", res.Content[0].Text)

	// Roots were not declared by this client: the tool error names the capability.
	_, err = c.CallTool(context.Background(), "ask", map[string]any{"roots": true})
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(mcp.CodeMissingClientCapability), e.Code)
}

// A modern request on a session initialized at a legacy revision is served
// from its own _meta: the session's capabilities do not leak into it.
func TestModernOnLegacySession(t *testing.T) {
	c := startRaw(t, modernOptions(&modernTools{}))
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"roots":{}},"clientInfo":{"name":"x","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	assert.Equal(t, float64(-32021), c.recv()["error"].(map[string]any)["code"])
	// A legacy request on it still gets a legacy result (no resultType).
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello"}}`)
	m := c.recv()
	for m["id"] == nil { // a log message (the session's level is info)
		m = c.recv()
	}
	assert.NotContains(t, m["result"], "resultType")
	// server/discover in legacy form is not a legacy method.
	c.send(`{"jsonrpc":"2.0","id":3,"method":"server/discover"}`)
	assert.Equal(t, float64(-32601), c.recv()["error"].(map[string]any)["code"])
}
