//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// The peer of a request, as handlers see it (transport.PeerFromContext):
// the verified token's subject, else its client id, else the address a
// trusted proxy forwarded (the rightmost hop that is not a trusted proxy;
// IPv6 by /64), else the connection's address. Headers from a peer that
// is not a trusted proxy are ignored.
func TestHTTPPeerOfRequest(t *testing.T) {
	f := newFakeServer()
	serveHeader := func(proxies []string, header string, auth bool) *httptest.Server {
		h := streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, Logger: quiet, Stateless: true, TrustedProxies: proxies, TrustedProxyHeader: header})
		if !auth {
			return newServer(t, h)
		}
		return newServerHandler(t, h, streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Logger: quiet})(h))
	}
	serve := func(proxies []string, auth bool) *httptest.Server { return serveHeader(proxies, "", auth) }
	behindProxy := serve([]string{"127.0.0.0/8", "10.0.0.0/8"}, false)
	behindForwarded := serveHeader([]string{"127.0.0.1"}, "forwarded", false)
	mappedProxy := serve([]string{"::ffff:127.0.0.0/104"}, false)
	authed := serve([]string{"127.0.0.1"}, true)
	direct := serve(nil, false)
	cases := []struct {
		name   string
		srv    *httptest.Server
		header map[string]string
		key    string
	}{
		{"subject", authed, map[string]string{"Authorization": "Bearer alice-token", "X-Forwarded-For": "192.0.2.1"}, "subject:alice"},
		{"client id of a token without subject", authed, map[string]string{"Authorization": "Bearer client-token"}, "client:app"},
		{"forwarded address", behindProxy, map[string]string{"X-Forwarded-For": "192.0.2.1"}, "addr:192.0.2.1"},
		{"hops of trusted proxies are skipped", behindProxy, map[string]string{"X-Forwarded-For": "192.0.2.1, 10.1.2.3"}, "addr:192.0.2.1"},
		{"a hop the client added on the left is not believed", behindProxy, map[string]string{"X-Forwarded-For": "198.51.100.9, 192.0.2.1"}, "addr:192.0.2.1"},
		{"IPv6 by /64", behindProxy, map[string]string{"X-Forwarded-For": "2001:db8:1:2:aaaa::1"}, "addr:2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6", behindProxy, map[string]string{"X-Forwarded-For": "::ffff:192.0.2.7"}, "addr:192.0.2.7"},
		// A proxy that appends X-Forwarded-For passes the client's own
		// Forwarded through: it must not choose the peer.
		{"a client's Forwarded is ignored where the proxy sets X-Forwarded-For", behindProxy, map[string]string{"Forwarded": "for=198.51.100.66", "X-Forwarded-For": "192.0.2.1"}, "addr:192.0.2.1"},
		{"a client's Forwarded alone is ignored too", behindProxy, map[string]string{"Forwarded": "for=198.51.100.66"}, "addr:127.0.0.1"},
		{"Forwarded where the proxy sets it", behindForwarded, map[string]string{"Forwarded": `for=192.0.2.60;proto=http, for="[2001:db8:1:2::9]:4711"`, "X-Forwarded-For": "192.0.2.1"}, "addr:2001:db8:1:2::/64"},
		{"a client's X-Forwarded-For is ignored where the proxy sets Forwarded", behindForwarded, map[string]string{"X-Forwarded-For": "198.51.100.66"}, "addr:127.0.0.1"},
		{"an IPv4-mapped proxy prefix means its IPv4 prefix", mappedProxy, map[string]string{"X-Forwarded-For": "192.0.2.1"}, "addr:192.0.2.1"},
		{"an unparsable hop stops at the proxy", behindProxy, map[string]string{"X-Forwarded-For": "192.0.2.1, unknown"}, "addr:127.0.0.1"},
		{"only trusted hops: the leftmost", behindProxy, map[string]string{"X-Forwarded-For": "10.0.0.1, 10.0.0.2"}, "addr:10.0.0.1"},
		{"no header", behindProxy, nil, "addr:127.0.0.1"},
		{"headers of a peer that is no trusted proxy", direct, map[string]string{"X-Forwarded-For": "192.0.2.1", "Forwarded": "for=192.0.2.1"}, "addr:127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.key, askPeer(t, c.srv, c.header))
		})
	}
}

// Beyond MaxSessionsPerPeer an initialize gets 429 naming the limit, while
// another peer still gets a session; a session that ends makes room again.
func TestHTTPMaxSessionsPerPeer(t *testing.T) {
	srv, _, _ := startHTTP(t, &streamhttp.Options{MaxSessionsPerPeer: 2, TrustedProxies: []string{"127.0.0.1"}})
	a, b := map[string]string{"X-Forwarded-For": "192.0.2.1"}, map[string]string{"X-Forwarded-For": "192.0.2.2"}
	open := func(h map[string]string) (*http.Response, string) {
		resp := do(t, srv, request{body: initBody, header: h})
		return resp, readBody(t, resp)
	}
	var first string
	for i := range 2 {
		resp, body := open(a)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		if i == 0 {
			first = resp.Header.Get("Mcp-Session-Id")
		}
	}
	resp, body := open(a)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	ans := decodeLimit(t, body)
	assert.Equal(t, "MaxSessionsPerPeer", ans.Error.Data.Limit)
	assert.EqualValues(t, 2, ans.Error.Data.Max)
	assert.Contains(t, ans.Error.Message, "MaxSessionsPerPeer = 2")
	assert.Equal(t, float64(1), ans.ID)

	resp, body = open(b)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another peer is served: %s", body)

	resp = do(t, srv, request{method: http.MethodDelete, session: first, version: "2025-11-25", header: a})
	readBody(t, resp)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, body = open(a)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "an ended session makes room: %s", body)
}

// Beyond MaxStreamsPerPeer a request gets 429 naming the limit, while
// another peer is still served.
func TestHTTPMaxStreamsPerPeer(t *testing.T) {
	srv, h, _ := startHTTP(t, &streamhttp.Options{MaxStreamsPerPeer: 1, TrustedProxies: []string{"127.0.0.1"}})
	a, b := map[string]string{"X-Forwarded-For": "192.0.2.1"}, map[string]string{"X-Forwarded-For": "192.0.2.2"}
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid, version: "2025-11-25", header: a})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()

	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: sid, version: "2025-11-25", header: a})
	body := readBody(t, resp)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	assert.Equal(t, "MaxStreamsPerPeer", decodeLimit(t, body).Error.Data.Limit)

	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":3,"method":"echo"}`, session: sid, version: "2025-11-25", header: b})
	assert.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
	assert.Equal(t, 1, h.StreamCount())
}
