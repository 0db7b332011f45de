//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// Beyond MaxSessions an initialize gets 503 with a JSON-RPC error naming
// the limit; a session that ends makes room again.
func TestHTTPMaxSessions(t *testing.T) {
	srv, h, _ := startHTTP(t, &streamhttp.Options{MaxSessions: 2})
	first := initialize(t, srv, "2025-11-25")
	initialize(t, srv, "2025-11-25")

	resp := do(t, srv, request{body: initBody})
	body := readBody(t, resp)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	a := decodeLimit(t, body)
	assert.Equal(t, float64(1), a.ID, "the initialize request's id is echoed")
	assert.Contains(t, a.Error.Message, "MaxSessions = 2")
	assert.Equal(t, "MaxSessions", a.Error.Data.Limit)
	assert.EqualValues(t, 2, a.Error.Data.Max)
	assert.Equal(t, 2, h.SessionCount())

	resp = do(t, srv, request{method: http.MethodDelete, session: first, version: "2025-11-25"})
	readBody(t, resp)
	initialize(t, srv, "2025-11-25")
}

// A session that no request names after its initialize ends after
// InitTimeout; one whose client sent notifications/initialized lives on.
func TestHTTPInitTimeout(t *testing.T) {
	srv, h, f := startHTTP(t, &streamhttp.Options{InitTimeout: 50 * time.Millisecond})
	kept := initialize(t, srv, "2025-11-25")
	resp := do(t, srv, request{body: initBody})
	readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	abandoned := resp.Header.Get("Mcp-Session-Id")
	require.Equal(t, 2, h.SessionCount())

	require.Eventually(t, func() bool { return h.SessionCount() == 1 }, 2*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { _, ended := f.counts(); return ended == 1 }, 2*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // well past InitTimeout
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: abandoned})
	readBody(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: kept})
	readBody(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// MaxStreams counts every POST until its answer and every GET stream, in
// all sessions (and modern and stateless requests alike): one more gets
// 503 naming the limit.
func TestHTTPMaxStreams(t *testing.T) {
	srv, h, f := startHTTP(t, &streamhttp.Options{MaxStreams: 2, ResponseMode: streamhttp.ResponseJSON})
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()

	slow := make(chan *http.Response, 1)
	go func() {
		slow <- do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"slow"}`, session: sid})
	}()
	require.Equal(t, "slow", <-f.started)
	require.Equal(t, 2, h.StreamCount())

	for _, r := range []request{
		{body: `{"jsonrpc":"2.0","id":3,"method":"echo"}`, session: sid},
		{body: initBody},
		{body: modernRequest("4", "tools/list", "", ""), header: modernHeaders("tools/list", "", nil)},
	} {
		resp := do(t, srv, r)
		body := readBody(t, resp)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
		a := decodeLimit(t, body)
		assert.Equal(t, "MaxStreams", a.Error.Data.Limit)
		assert.Contains(t, a.Error.Message, "MaxStreams = 2")
	}

	close(f.gate)
	resp := <-slow
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, readBody(t, resp))
	cancel()
	require.Eventually(t, func() bool { return h.StreamCount() == 0 }, 2*time.Second, 5*time.Millisecond)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":5,"method":"echo"}`, session: sid})
	assert.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
}

// A session may have MaxSessionGETStreams GET streams open at once: one
// more, a resumption included, gets 429 naming the limit.
func TestHTTPMaxSessionGETStreams(t *testing.T) {
	srv, _, _ := startHTTP(t, &streamhttp.Options{MaxSessionGETStreams: 1})
	sid := initialize(t, srv, "2025-11-25")
	other := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()

	resp := do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": "7_0"}})
	body := readBody(t, resp)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	a := decodeLimit(t, body)
	assert.Equal(t, "MaxSessionGETStreams", a.Error.Data.Limit)
	assert.EqualValues(t, 1, a.Error.Data.Max)

	// Another session has its own count.
	get2 := doCtx(t, ctx, srv, request{method: http.MethodGet, session: other})
	defer get2.Body.Close()
	assert.Equal(t, http.StatusOK, get2.StatusCode)
}

// The body's deadline ends with the body: an answer that comes later,
// and a GET stream, are not cut off.
func TestHTTPBodyReadTimeoutSparesStreams(t *testing.T) {
	srv, _, f := startHTTP(t, &streamhttp.Options{BodyReadTimeout: 50 * time.Millisecond})
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()
	go func() {
		<-f.started
		time.Sleep(250 * time.Millisecond)
		close(f.gate)
	}()
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"slow"}`, session: sid})
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, readBody(t, resp))
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":3,"method":"broadcast"}`, session: sid})
	readBody(t, resp)
	evs := sseEvents(t, get.Body, 2) // the priming event, then the notification
	assert.Contains(t, evs[1].data, "unrelated", "the GET stream outlived the deadline")
}
