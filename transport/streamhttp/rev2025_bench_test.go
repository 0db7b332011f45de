//go:build !keel_omit2025

package streamhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A tools/call in a 2025-11-25 session: the success path of the 2025
// rules (session lookup, hand-off to the session's Serve, JSON answer).
func BenchmarkHTTPSessionToolCall(b *testing.B) {
	h := benchHandler(b)
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		b.Fatalf("initialize: status %d: %s", w.Code, w.Body)
	}
	req = httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusAccepted {
		b.Fatalf("initialized: status %d: %s", w.Code, w.Body)
	}
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	benchPOST(b, h, body, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
}
