package streamhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// benchPOST serves body through h b.N times, on the handler alone (no
// network, no client), and fails unless each answer is a result with status 200.
func benchPOST(b *testing.B, h http.Handler, body string, header map[string]string) {
	benchPOSTContext(b, h, body, header, false)
}

// benchPOSTContext is benchPOST; with cancelable, each request's context
// can end (and ends once it is answered), as net/http's server gives
// every request: what registers with it is counted.
func benchPOSTContext(b *testing.B, h http.Handler, body string, header map[string]string, cancelable bool) {
	b.Helper()
	benchAnswer(b, h, body, header, cancelable, http.StatusOK, `"result"`)
}

// benchAnswer is benchPOSTContext for answers with status whose body
// holds has.
func benchAnswer(b *testing.B, h http.Handler, body string, header map[string]string, cancelable bool, status int, has string) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
		cancel := context.CancelFunc(func() {})
		if cancelable {
			var ctx context.Context
			ctx, cancel = context.WithCancel(req.Context())
			req = req.WithContext(ctx)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		cancel()
		if w.Code != status || !strings.Contains(w.Body.String(), has) {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// benchHandler is an mcp.Server with the echo tool behind NewServerHandler.
func benchHandler(b *testing.B) *streamhttp.Handler {
	srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
	h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Logger: quiet, ResponseMode: streamhttp.ResponseJSON})
	b.Cleanup(func() { _ = h.Close() })
	return h
}

// A 2026-07-28 tools/call, served on the POST's goroutine: the success
// path of the per-request revision.
func BenchmarkHTTPModernToolCall(b *testing.B) {
	h := benchHandler(b)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` + fullMeta + `}}`
	benchPOST(b, h, body, map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
}

// A 2026-07-28 tools/call whose Mcp-Name differs from its params.name:
// the refusal of the handler's own check, 400 and -32020, answered by the
// handler itself when the server has no Middleware, else by the Server
// through its chain.
func BenchmarkHTTPModernRefusal(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` + fullMeta + `}}`
	header := map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "other"}
	pass := func(next mcp.MethodHandler) mcp.MethodHandler { return next }
	for name, mws := range map[string][]mcp.Middleware{"no Middleware": nil, "a Middleware": {pass}} {
		b.Run(name, func(b *testing.B) {
			o := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
			o.Middleware = mws
			h := streamhttp.NewServerHandler(mcp.NewServer(o), &streamhttp.Options{Logger: quiet, ResponseMode: streamhttp.ResponseJSON})
			b.Cleanup(func() { _ = h.Close() })
			benchAnswer(b, h, body, header, false, http.StatusBadRequest, `"code":-32020`)
		})
	}
}

// The call of BenchmarkHTTPModernToolCall with a request context that can
// end, as net/http's server gives every request.
func BenchmarkHTTPModernToolCallCancelable(b *testing.B) {
	h := benchHandler(b)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` + fullMeta + `}}`
	benchPOSTContext(b, h, body, map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}, true)
}
