//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

type metaWritingTools struct{}

func (metaWritingTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}
func (metaWritingTools) CallTool(_ context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	call.Meta["tool/wrote"] = "yes"
	return mcp.TextResult("ok"), nil
}

// A tool that writes to its ToolCall.Meta changes its own copy, not the
// CallToolParams a middleware decoded (Params) and still holds.
func TestToolCallMetaIsTheCallsOwn(t *testing.T) {
	var seen *mcp.CallToolParams
	var after any
	o := modernOptions(&modernTools{})
	o.Tools = metaWritingTools{}
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method == "tools/call" {
				p, err := mcp.Params[mcp.CallToolParams](req)
				require.NoError(t, err)
				seen = p
			}
			res, err := next(ctx, req)
			if seen != nil {
				after = seen.Meta["tool/wrote"]
			}
			return res, err
		}
	}}
	c := connectRaw(t, mcp.NewServer(o), true, false)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"acme/trace":"t-1"}}}`)
	require.Contains(t, c.recv(), "result")
	assert.Nil(t, after, "the middleware's decoded value was changed by the tool")
}
