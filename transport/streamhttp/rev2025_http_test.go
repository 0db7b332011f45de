//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// Every status rule of the streamable HTTP transport, one request each.
func TestHTTPStatusRules(t *testing.T) {
	srv, _, _ := startHTTP(t, &streamhttp.Options{MaxBodyBytes: 1024})
	sid := initialize(t, srv, "2025-11-25")
	ping := `{"jsonrpc":"2.0","id":7,"method":"echo","params":{}}`
	tests := []struct {
		name     string
		req      request
		status   int
		bodyHas  string
		noHeader string
	}{
		{name: "unsupported method", req: request{method: http.MethodPut, body: ping}, status: 405, bodyHas: "Method Not Allowed"},
		{name: "non-JSON content type", req: request{body: ping, header: map[string]string{"Content-Type": "text/plain"}}, status: 415},
		{name: "Accept lacks SSE", req: request{body: ping, session: sid, header: map[string]string{"Accept": "application/json"}}, status: 406},
		{name: "Accept lacks JSON", req: request{body: ping, session: sid, header: map[string]string{"Accept": "text/event-stream"}}, status: 406},
		{name: "GET without SSE in Accept", req: request{method: http.MethodGet, session: sid, header: map[string]string{"Accept": "application/json"}}, status: 406},
		{name: "body over the limit", req: request{body: `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`, session: sid}, status: 413, bodyHas: "MaxMessageBytes"},
		{name: "unparsable JSON", req: request{body: `{"jsonrpc":`, session: sid}, status: 400, bodyHas: `"code":-32700`},
		{name: "not JSON-RPC", req: request{body: `{"jsonrpc":"1.0","id":3,"method":"echo"}`, session: sid}, status: 400, bodyHas: `"id":3,"error":{"code":-32600`},
		{name: "missing session id", req: request{body: ping}, status: 400, bodyHas: "Mcp-Session-Id"},
		{name: "unknown session", req: request{body: ping, session: "nope"}, status: 404, bodyHas: "Session not found"},
		{name: "GET unknown session", req: request{method: http.MethodGet, session: "nope"}, status: 404},
		{name: "DELETE missing session id", req: request{method: http.MethodDelete}, status: 400},
		{name: "unsupported protocol version", req: request{body: ping, session: sid, version: "1999-01-01"}, status: 400, bodyHas: "MCP-Protocol-Version"},
		{name: "bad Origin", req: request{body: ping, session: sid, header: map[string]string{"Origin": "http://evil.example.com"}}, status: 403, bodyHas: "Origin"},
		{name: "bad Host", req: request{body: initBody, header: map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}}, status: 403},
		{name: "notification accepted", req: request{body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, session: sid}, status: 202},
		{name: "response accepted", req: request{body: `{"jsonrpc":"2.0","id":"x","result":{}}`, session: sid}, status: 202},
		{name: "batch outside 2025-03-26", req: request{body: `[` + ping + `]`, session: sid}, status: 400, bodyHas: "2025-03-26"},
		{name: "request answered", req: request{body: ping, session: sid, version: "2025-11-25"}, status: 200, bodyHas: `"id":7,"result":{}`, noHeader: "Mcp-Session-Id"},
		{name: "absent version header means 2025-03-26", req: request{body: ping, session: sid}, status: 200},
		{name: "localhost Origin allowed", req: request{body: ping, session: sid, header: map[string]string{"Origin": "http://localhost:5173"}}, status: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, srv, tc.req)
			body := readBody(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode, body)
			assert.Contains(t, body, tc.bodyHas)
			if tc.status == 202 {
				assert.Empty(t, body)
			}
			if tc.status >= 400 {
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				assert.Contains(t, body, `"jsonrpc":"2.0"`)
			}
			if tc.status == 405 {
				assert.Equal(t, "GET, POST, DELETE", resp.Header.Get("Allow"))
			}
			if tc.noHeader != "" {
				assert.Empty(t, resp.Header.Get(tc.noHeader))
			}
		})
	}
}

// The initialize response carries a random visible-ASCII session id; the
// session ends with DELETE, after which its id gets 404 and Serve ends.
func TestHTTPSessionLifecycle(t *testing.T) {
	srv, h, f := startHTTP(t, nil)
	resp := do(t, srv, request{body: initBody})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	sid := resp.Header.Get("Mcp-Session-Id")
	assert.Contains(t, readBody(t, resp), `"protocolVersion":"2025-11-25"`)
	require.GreaterOrEqual(t, len(sid), 16)
	for _, c := range sid {
		assert.True(t, c >= 0x21 && c <= 0x7e, "visible ASCII")
	}
	other := initialize(t, srv, "2025-06-18")
	assert.NotEqual(t, sid, other)
	assert.Equal(t, 2, h.SessionCount())

	resp = do(t, srv, request{method: http.MethodDelete, session: sid, version: "2025-11-25"})
	readBody(t, resp)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: sid, version: "2025-11-25"})
	readBody(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Eventually(t, func() bool { _, ended := f.counts(); return ended == 1 }, 2*time.Second, time.Millisecond)
	f.mu.Lock()
	assert.Error(t, f.ctxs[0].Err(), "Serve's context is cancelled")
	f.mu.Unlock()
	assert.Equal(t, 1, h.SessionCount())

	// The other session is untouched.
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: other})
	assert.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
}

// Sessions that see no request for IdleTimeout expire; an open GET stream
// keeps a session alive.
func TestHTTPIdleExpiry(t *testing.T) {
	srv, h, _ := startHTTP(t, &streamhttp.Options{IdleTimeout: 30 * time.Millisecond})
	idle := initialize(t, srv, "2025-11-25")
	kept := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: kept})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()

	require.Eventually(t, func() bool { return h.SessionCount() == 1 }, 2*time.Second, 2*time.Millisecond)
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: idle})
	readBody(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: kept})
	readBody(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// Stateless mode: no session ids, any replica serves any request, each
// request's session is already initialized at the header's revision; no
// GET stream, no DELETE.
func TestHTTPStatelessReplicasShareNothing(t *testing.T) {
	a, _, fa := startHTTP(t, &streamhttp.Options{Stateless: true})
	b, _, fb := startHTTP(t, &streamhttp.Options{Stateless: true})
	replicas := []*httptest.Server{a, b}

	resp := do(t, a, request{body: initBody})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
	assert.Contains(t, readBody(t, resp), `"protocolVersion":"2025-11-25"`)
	resp = do(t, b, request{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, version: "2025-11-25"})
	readBody(t, resp)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)

	for i := range 6 {
		srv := replicas[i%2]
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":5,"method":"stateless"}`, version: "2025-06-18"})
		assert.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{"stateless":true,"version":"2025-06-18"}}`, readBody(t, resp))
	}
	sa, _ := fa.counts()
	sb, _ := fb.counts()
	assert.Equal(t, 4, sa, "initialize + 3 requests")
	assert.Equal(t, 3, sb)

	resp = do(t, a, request{method: http.MethodGet})
	readBody(t, resp)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
	resp = do(t, b, request{method: http.MethodDelete})
	readBody(t, resp)
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp = do(t, a, request{body: `{"jsonrpc":"2.0","id":5,"method":"echo"}`, version: "2030-01-01"})
	readBody(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Eventually(t, func() bool { s, e := fa.counts(); return s == e }, 2*time.Second, time.Millisecond, "every stateless session ends")
}

// Batches are accepted in 2025-03-26 sessions and answered as one array.
func TestHTTPBatch2025_03_26(t *testing.T) {
	srv, _, _ := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-03-26")
	resp := do(t, srv, request{body: `[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"echo","params":{"b":2}}]`, session: sid})
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `[{"jsonrpc":"2.0","id":1,"result":{"a":1}},{"jsonrpc":"2.0","id":2,"result":{"b":2}}]`, readBody(t, resp))
	resp = do(t, srv, request{body: `[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":1}]`, session: sid})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), "-32600")
}

// A request id still unanswered in the session is refused: its response
// could not be routed.
func TestHTTPDuplicateInFlightID(t *testing.T) {
	srv, _, f := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-11-25")
	first := make(chan string, 1)
	go func() {
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":9,"method":"slow"}`, session: sid})
		first <- readBody(t, resp)
	}()
	<-f.started
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":9,"method":"echo"}`, session: sid})
	body := readBody(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "already in use")
	close(f.gate)
	assert.Equal(t, `{"jsonrpc":"2.0","id":9,"result":{}}`, <-first)
}

// Shutdown refuses new requests, lets in-flight ones finish and be
// answered, then ends every session.
func TestHTTPShutdownDrains(t *testing.T) {
	srv, h, f := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-11-25")
	slow := make(chan string, 1)
	go func() {
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"slow"}`, session: sid})
		slow <- readBody(t, resp)
	}()
	<-f.started

	shut := make(chan error, 1)
	go func() { shut <- h.Shutdown(context.Background()) }()
	require.Eventually(t, func() bool {
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: sid})
		readBody(t, resp)
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 2*time.Second, 2*time.Millisecond)
	// Notifications (and responses) are still accepted while draining.
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","method":"notifications/x"}`, session: sid})
	readBody(t, resp)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	select {
	case <-shut:
		t.Fatal("Shutdown returned with a request in flight")
	default:
	}
	close(f.gate)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, <-slow)
	require.NoError(t, <-shut)
	assert.Equal(t, 0, h.SessionCount())
	s, e := f.counts()
	assert.Equal(t, s, e)
}

// Shutdown with an expired context closes sessions at once.
func TestHTTPShutdownTimeout(t *testing.T) {
	srv, h, f := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-11-25")
	done := make(chan int, 1)
	go func() {
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"slow"}`, session: sid})
		readBody(t, resp)
		done <- resp.StatusCode
	}()
	<-f.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, h.Shutdown(ctx), context.DeadlineExceeded)
	assert.Equal(t, http.StatusNotFound, <-done)
}
