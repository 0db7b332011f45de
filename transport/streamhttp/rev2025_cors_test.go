//go:build !keel_omit2025

package streamhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// CORS in front of RequireBearer in front of the handler: preflights are
// answered without a token, allowed origins can read the session id and
// the 401 challenge, other origins get no CORS headers (and the handler's
// 403), requests without Origin are untouched.
func TestCORS(t *testing.T) {
	_, h, _ := startHTTP(t, &streamhttp.Options{AllowedOrigins: []string{"https://app.example.com", "localhost"}})
	protected := httptest.NewServer(streamhttp.CORS(&streamhttp.CORSOptions{
		AllowedOrigins: []string{"https://app.example.com", "localhost"},
	})(streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Logger: quiet})(h)))
	t.Cleanup(protected.Close)

	send := func(method, origin string, header map[string]string, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, protected.URL+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"}
	post := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": "Bearer alice-token"}

	cases := []struct {
		name, method, origin string
		header               map[string]string
		body                 string
		status               int
		allowOrigin          string
		check                func(t *testing.T, resp *http.Response)
	}{
		{name: "preflight, allowed origin", method: http.MethodOptions, origin: "https://app.example.com", header: preflight,
			status: 204, allowOrigin: "https://app.example.com", check: func(t *testing.T, resp *http.Response) {
				assert.Equal(t, "GET, POST, DELETE", resp.Header.Get("Access-Control-Allow-Methods"))
				for _, hdr := range []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID", "Mcp-Method", "Mcp-Name"} {
					assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), hdr)
				}
				assert.Equal(t, "600", resp.Header.Get("Access-Control-Max-Age"))
				assert.Contains(t, resp.Header.Values("Vary"), "Origin")
			}},
		{name: "preflight allows the Mcp-Param headers asked for", method: http.MethodOptions, origin: "https://app.example.com",
			header: map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, mcp-param-region, mcp-param-bad header, x-other"},
			status: 204, allowOrigin: "https://app.example.com", check: func(t *testing.T, resp *http.Response) {
				allow := resp.Header.Get("Access-Control-Allow-Headers")
				assert.Contains(t, allow, "mcp-param-region")
				assert.NotContains(t, allow, "bad header")
				assert.NotContains(t, allow, "x-other")
			}},
		{name: "preflight, bare host name matches any port", method: http.MethodOptions, origin: "http://localhost:5173", header: preflight,
			status: 204, allowOrigin: "http://localhost:5173"},
		{name: "preflight, other origin", method: http.MethodOptions, origin: "https://evil.example.com", header: preflight, status: 403},
		{name: "OPTIONS without preflight headers reaches the chain", method: http.MethodOptions, origin: "https://app.example.com",
			status: 401, allowOrigin: "https://app.example.com"},
		{name: "401 challenge readable by an allowed origin", method: http.MethodPost, origin: "https://app.example.com",
			header: map[string]string{"Content-Type": "application/json"}, body: initBody, status: 401, allowOrigin: "https://app.example.com",
			check: func(t *testing.T, resp *http.Response) {
				assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate")
				assert.Contains(t, resp.Header.Get("WWW-Authenticate"), prmURL)
			}},
		{name: "initialize from an allowed origin exposes the session id", method: http.MethodPost, origin: "https://app.example.com",
			header: post, body: initBody, status: 200, allowOrigin: "https://app.example.com",
			check: func(t *testing.T, resp *http.Response) {
				assert.NotEmpty(t, resp.Header.Get("Mcp-Session-Id"))
				assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id")
			}},
		{name: "other origin: no CORS headers, the handler refuses", method: http.MethodPost, origin: "https://evil.example.com",
			header: post, body: initBody, status: 403},
		{name: "no Origin: untouched", method: http.MethodPost, header: post, body: initBody, status: 200,
			check: func(t *testing.T, resp *http.Response) {
				assert.Empty(t, resp.Header.Get("Access-Control-Expose-Headers"))
				assert.Empty(t, resp.Header.Values("Vary"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := send(tc.method, tc.origin, tc.header, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.allowOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
			if tc.check != nil {
				tc.check(t, resp)
			}
		})
	}
}
