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
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"result"`) {
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

// The same call with a request context that can end, as net/http's server
// gives every request.
func BenchmarkHTTPModernToolCallCancelable(b *testing.B) {
	h := benchHandler(b)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},` + fullMeta + `}}`
	benchPOSTContext(b, h, body, map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}, true)
}
