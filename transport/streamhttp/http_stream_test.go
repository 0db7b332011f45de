package streamhttp_test

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/transport/streamhttp"
)

const noteRelated = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"related"}}`

// Host and Origin lists are configurable; "*" admits anything.
func TestHTTPAllowedHostsAndOrigins(t *testing.T) {
	srv, _, _ := startHTTP(t, &streamhttp.Options{
		AllowedHosts:   []string{"mcp.example.com", "127.0.0.1"},
		AllowedOrigins: []string{"https://app.example.com"},
	})
	cases := []struct {
		host, origin string
		status       int
	}{
		{"mcp.example.com", "", 200},
		{"mcp.example.com:8443", "https://app.example.com", 200},
		{"localhost", "", 403},
		{"mcp.example.com", "http://app.example.com", 403},
		{"mcp.example.com", "https://localhost", 403},
		{"mcp.example.com", "null", 403},
	}
	for _, c := range cases {
		resp := do(t, srv, request{body: initBody, header: map[string]string{"Host": c.host, "Origin": c.origin}})
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.host, c.origin, body)
	}
	open, _, _ := startHTTP(t, &streamhttp.Options{AllowedHosts: []string{"*"}, AllowedOrigins: []string{"*"}})
	resp := do(t, open, request{body: initBody, header: map[string]string{"Host": "anything.example", "Origin": "https://x.example"}})
	readBody(t, resp)
	assert.Equal(t, 200, resp.StatusCode)
}
