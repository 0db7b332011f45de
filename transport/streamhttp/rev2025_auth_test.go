//go:build !keel_omit2025

package streamhttp_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// Behind RequireBearer, the token reaches the MCP request handlers, and a
// session stays bound to the user who created it.
func TestHTTPSessionBoundToUser(t *testing.T) {
	f := newFakeServer()
	h := streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, Logger: quiet})
	srv := newServerHandler(t, h, streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Logger: quiet})(h))
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }

	resp := do(t, srv, request{body: initBody})
	readBody(t, resp)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer resource_metadata="`+prmURL+`"`, resp.Header.Get("WWW-Authenticate"))

	resp = do(t, srv, request{body: initBody, header: as("alice-token")})
	readBody(t, resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"whoami"}`, session: sid, header: as("alice-token")})
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"subject":"alice"}}`, readBody(t, resp))

	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		resp = do(t, srv, request{method: method, body: `{"jsonrpc":"2.0","id":3,"method":"whoami"}`, session: sid, header: as("bob-token")})
		readBody(t, resp)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s by another user", method)
	}
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":4,"method":"whoami"}`, session: sid, header: as("alice-token")})
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{"subject":"alice"}}`, readBody(t, resp))
}
