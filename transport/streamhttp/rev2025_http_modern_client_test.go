//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// A Client of revision 2026-07-28 over streamable HTTP: no session, the
// routing headers on every POST, an input-required round, and a JSON-RPC
// error that travels with HTTP 404 (removed method) or 400 (-32022) still
// reaches the caller as *mcp.Error. The same endpoint serves a legacy
// client with a session.
func TestModernClientOverHTTP(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolAsk, mcptest.ToolEcho)))
			h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Stateless: stateless})
			ts := httptest.NewServer(h)
			defer ts.Close()
			defer h.Close()
			ctx := context.Background()

			c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728,
				OnElicitation: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
				}})
			tr := streamhttp.NewClientTransport(ts.URL, nil)
			require.NoError(t, c.Connect(ctx, tr))
			defer c.Close()
			assert.Empty(t, tr.SessionID(), "no session in 2026-07-28")
			assert.Equal(t, 0, h.SessionCount())

			res, err := c.CallTool(ctx, mcptest.ToolAsk, nil)
			require.NoError(t, err)
			assert.Equal(t, "Hello, Ada!", res.Content[0].Text)

			_, err = c.CallTool(ctx, mcptest.ToolAsk, map[string]any{"roots": true}) // roots not declared
			var e *mcp.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, int64(mcp.CodeMissingClientCapability), e.Code)

			_, err = c.ListPrompts(ctx, "") // not offered: -32601 with HTTP 404
			require.ErrorAs(t, err, &e)
			assert.Equal(t, int64(mcp.CodeMethodNotFound), e.Code)

			legacy := mcp.NewClient(nil)
			require.NoError(t, legacy.Connect(ctx, streamhttp.NewClientTransport(ts.URL, nil)))
			defer legacy.Close()
			res, err = legacy.CallTool(ctx, mcptest.ToolEcho, map[string]any{"message": "hi"})
			require.NoError(t, err)
			assert.Equal(t, "hi", res.Content[0].Text)
		})
	}
}
