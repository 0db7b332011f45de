//go:build !keel_omit2025

package streamhttp_test

import (
	"testing"

	"github.com/keelmcp/keel/mcp"
)

// A 2025 session over HTTP: the state gate's refusal, the method table's,
// and a result that cannot be sent reach the Middleware as the error the
// client gets; the handler's refusal of the exchange's
// MCP-Protocol-Version header does not.
func TestHTTPAnswerChainSession(t *testing.T) {
	cc := &chainCodes{}
	hs := newServer(t, chainHandler(t, cc))
	resp := do(t, hs, request{body: initBody})
	readBody(t, resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	const v = "2025-11-25"
	checkHTTPChain(t, hs, cc, sid, []httpChainCase{
		{name: "before notifications/initialized", id: `"early"`, version: v, body: `{"jsonrpc":"2.0","id":"early","method":"tools/list"}`, code: mcp.CodeNotInitialized},
	})
	resp = do(t, hs, request{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session: sid, version: v})
	readBody(t, resp)
	checkHTTPChain(t, hs, cc, sid, []httpChainCase{
		{name: "served", id: `1`, version: v, body: `{"jsonrpc":"2.0","id":1,"method":"acme/ok"}`},
		{name: "unknown method", id: `2`, version: v, body: `{"jsonrpc":"2.0","id":2,"method":"acme/none"}`, code: mcp.CodeMethodNotFound},
		{name: "result not serializable", id: `3`, version: v, body: `{"jsonrpc":"2.0","id":3,"method":"acme/chan"}`, code: mcp.CodeInternalError},
		{name: "response over MaxMessageBytes", id: `4`, version: v, body: `{"jsonrpc":"2.0","id":4,"method":"acme/big"}`, code: mcp.CodeInternalError},
		// The handler's check of the exchange's header: answered by it (id
		// null), never seen.
		{name: "MCP-Protocol-Version not served", id: `5`, version: "1999-01-01", body: `{"jsonrpc":"2.0","id":5,"method":"acme/ok"}`,
			code: mcp.CodeInvalidRequest, status: 400, unseen: true},
	})
}
