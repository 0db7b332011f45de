package streamhttp_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// askPeer asks the fake server behind srv which peer a request with header
// comes from (transport.PeerFromContext in the handler).
func askPeer(t *testing.T, srv *httptest.Server, header map[string]string) string {
	t.Helper()
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"peer"}`, version: "2025-11-25", header: header})
	body := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var m struct {
		Result map[string]string `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &m), body)
	return m.Result["key"]
}

// An entry of TrustedProxies that is neither an address nor a prefix
// stops the program at start-up, naming the option.
func TestHTTPTrustedProxiesInvalid(t *testing.T) {
	f := newFakeServer()
	assert.PanicsWithValue(t, `transport: Options.TrustedProxies: "10.0.0.0/33" is neither an IP address nor a CIDR prefix`, func() {
		streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, TrustedProxies: []string{"10.0.0.0/33"}})
	})
	assert.PanicsWithValue(t, `transport: Options.TrustedProxies: "::ffff:0:0/80" is an IPv4-mapped prefix shorter than /96`, func() {
		streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, TrustedProxies: []string{"::ffff:0:0/80"}})
	})
	assert.NotPanics(t, func() {
		streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, TrustedProxies: []string{"10.0.0.1", "[::1]", "2001:db8::/32", "::ffff:10.0.0.0/104"}})
	})
}
