package streamhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// testVerifier accepts "alice-token" (scopes mcp:read mcp:write),
// "bob-token" (mcp:read), "expired-token", "other-audience-token" and
// "no-audience-token";
// "broken-token" makes it fail.
var testVerifier = streamhttp.TokenVerifierFunc(func(_ context.Context, token string, _ *http.Request) (*streamhttp.TokenInfo, error) {
	const resource = testResource
	switch token {
	case "alice-token":
		return &streamhttp.TokenInfo{Subject: "alice", Scopes: []string{"mcp:read", "mcp:write"}, Audience: []string{resource}}, nil
	case "bob-token":
		return &streamhttp.TokenInfo{Subject: "bob", Scopes: []string{"mcp:read"}, Audience: []string{resource}}, nil
	case "expired-token":
		return &streamhttp.TokenInfo{Subject: "carol", Audience: []string{resource}, Expiry: time.Unix(1, 0)}, nil
	case "other-audience-token":
		return &streamhttp.TokenInfo{Subject: "dave", Audience: []string{"https://elsewhere.example/mcp"}}, nil
	case "no-audience-token":
		return &streamhttp.TokenInfo{Subject: "erin", Scopes: []string{"mcp:read", "mcp:write"}}, nil
	case "client-token": // client credentials: a client id, no subject
		return &streamhttp.TokenInfo{ClientID: "app", Audience: []string{resource}}, nil
	case "nobody-token":
		return &streamhttp.TokenInfo{Audience: []string{resource}}, nil
	case "broken-token":
		return nil, errors.New("introspection endpoint unreachable")
	}
	return nil, streamhttp.ErrInvalidToken
})

// testResource is the resource the test tokens are issued for, and prmURL
// its protected resource metadata URL.
const (
	testResource = "http://127.0.0.1/mcp"
	prmURL       = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"
)

func TestRequireBearer(t *testing.T) {
	protect := streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{
		ResourceMetadataURL: prmURL,
		Resource:            "http://127.0.0.1/mcp",
		Logger:              quiet,
	})
	var seen *streamhttp.TokenInfo
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = streamhttp.TokenInfoFromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	}))
	cases := []struct {
		name, auth, query string
		status            int
		challenge         string
	}{
		{name: "no credentials", status: 401, challenge: `Bearer resource_metadata="` + prmURL + `"`},
		{name: "not Bearer", auth: "Basic YWxhZGRpbjpvcGVuc2VzYW1l", status: 400, challenge: `Bearer error="invalid_request"`},
		{name: "empty token", auth: "Bearer ", status: 400, challenge: `error="invalid_request"`},
		{name: "malformed token", auth: "Bearer a b", status: 400, challenge: `error="invalid_request"`},
		{name: "token in the query", query: "?access_token=alice-token", status: 400, challenge: `error_description="access tokens are accepted only in the Authorization header"`},
		{name: "header and query", auth: "Bearer alice-token", query: "?access_token=alice-token", status: 400},
		{name: "unknown token", auth: "Bearer nope", status: 401, challenge: `Bearer error="invalid_token", error_description="the access token is invalid", resource_metadata="` + prmURL + `"`},
		{name: "expired", auth: "Bearer expired-token", status: 401, challenge: `has expired`},
		{name: "another resource's token", auth: "Bearer other-audience-token", status: 401, challenge: `not issued for this resource`},
		{name: "token without audience", auth: "Bearer no-audience-token", status: 401, challenge: `not issued for this resource`},
		{name: "verifier failure", auth: "Bearer broken-token", status: 500},
		{name: "token naming no subject or client", auth: "Bearer nobody-token", status: 401, challenge: `error="invalid_token", error_description="the access token names no subject or client"`},
		{name: "valid", auth: "Bearer alice-token", status: 204},
		{name: "scheme is case-insensitive", auth: "bearer alice-token", status: 204},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen = nil
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp"+c.query, nil)
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, c.status, w.Code, w.Body.String())
			assert.Contains(t, w.Header().Get("WWW-Authenticate"), c.challenge)
			if c.status == 204 {
				require.NotNil(t, seen)
				assert.Equal(t, "alice", seen.Subject)
			} else {
				assert.Nil(t, seen)
			}
		})
	}
}

// Required scopes: a token without one gets 403 insufficient_scope naming
// the scopes and the metadata; 401 challenges name the scopes too.
func TestRequireBearerScopes(t *testing.T) {
	protect := streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Scopes: []string{"mcp:read", "mcp:write"}, Logger: quiet})
	h := protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	do := func(auth string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://localhost:8080/mcp", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := do("Bearer bob-token")
	assert.Equal(t, http.StatusForbidden, w.Code)
	assert.Equal(t, `Bearer error="insufficient_scope", error_description="the access token lacks a required scope", scope="mcp:read mcp:write", resource_metadata="`+prmURL+`"`,
		w.Header().Get("WWW-Authenticate"))
	w = do("")
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Equal(t, `Bearer scope="mcp:read mcp:write", resource_metadata="`+prmURL+`"`, w.Header().Get("WWW-Authenticate"))
	assert.Equal(t, http.StatusNoContent, do("Bearer alice-token").Code)
}

func TestProtectedResourceMetadata(t *testing.T) {
	mux := http.NewServeMux()
	url := streamhttp.HandleProtectedResourceMetadata(mux, &streamhttp.ProtectedResourceMetadata{
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://auth.example.com"},
		ScopesSupported:      []string{"mcp:read"},
	})
	assert.Equal(t, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp", url)
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, w.Code, path)
		assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
		assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
		var doc map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &doc))
		assert.Equal(t, map[string]any{
			"resource":                 "https://mcp.example.com/mcp",
			"authorization_servers":    []any{"https://auth.example.com"},
			"scopes_supported":         []any{"mcp:read"},
			"bearer_methods_supported": []any{"header"},
		}, doc)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/.well-known/oauth-protected-resource", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, []string{"/.well-known/oauth-protected-resource"}, streamhttp.ProtectedResourceMetadataPaths("https://mcp.example.com"))
	assert.Panics(t, func() {
		streamhttp.ProtectedResourceMetadataHandler(&streamhttp.ProtectedResourceMetadata{Resource: "x"})
	})
}

// newServerHandler serves handler (wrapping h) on a test server.
func newServerHandler(t *testing.T, h *streamhttp.Handler, handler http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return srv
}

// Bearer auth without an audience to check is refused at construction,
// with a message that says what to set.
func TestRequireBearerNeedsResource(t *testing.T) {
	cases := []struct {
		name string
		opts *streamhttp.BearerOptions
		want string
	}{
		{"nil options", nil, "needs BearerOptions.Resource"},
		{"no Resource", &streamhttp.BearerOptions{ResourceMetadataURL: prmURL, Scopes: []string{"mcp"}}, "needs BearerOptions.Resource"},
		{"relative Resource", &streamhttp.BearerOptions{Resource: "/mcp"}, "absolute http(s) URL"},
		{"Resource without scheme", &streamhttp.BearerOptions{Resource: "mcp.example.com/mcp"}, "absolute http(s) URL"},
		{"Resource with a fragment", &streamhttp.BearerOptions{Resource: "https://mcp.example.com/mcp#x"}, "absolute http(s) URL"},
		{"relative metadata URL", &streamhttp.BearerOptions{Resource: testResource, ResourceMetadataURL: "/.well-known/x"}, "ResourceMetadataURL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "RequireBearer must refuse to start")
				assert.Contains(t, fmt.Sprint(r), c.want)
			}()
			streamhttp.RequireBearer(testVerifier, c.opts)
		})
	}
}

// The challenge names only configured URLs: a request with a foreign Host
// (checked by the Handler only after RequireBearer) never sees it echoed,
// and with a valid token still meets the Handler's 403.
func TestRequireBearerChallengeIgnoresHost(t *testing.T) {
	_, h, _ := startHTTP(t, nil)
	srv := newServerHandler(t, h, streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{
		Resource: "https://mcp.example.com/mcp", Logger: quiet})(h))
	const evil = "evil.example:8080"
	resp := do(t, srv, request{body: initBody, header: map[string]string{"Host": evil}})
	body := readBody(t, resp)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	challenge := resp.Header.Get("WWW-Authenticate")
	assert.Equal(t, `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`, challenge)
	assert.NotContains(t, challenge+body, "evil")

	resp = do(t, srv, request{body: initBody, header: map[string]string{"Host": evil, "Authorization": "Bearer other-audience-token"}})
	body = readBody(t, resp)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.NotContains(t, resp.Header.Get("WWW-Authenticate")+body, "evil")

	// A token for this resource passes; the Handler then refuses the Host.
	good := streamhttp.TokenVerifierFunc(func(context.Context, string, *http.Request) (*streamhttp.TokenInfo, error) {
		return &streamhttp.TokenInfo{Subject: "ada", Audience: []string{"https://mcp.example.com/mcp"}}, nil
	})
	srv2 := newServerHandler(t, h, streamhttp.RequireBearer(good, &streamhttp.BearerOptions{
		Resource: "https://mcp.example.com/mcp", Logger: quiet})(h))
	resp = do(t, srv2, request{body: initBody, header: map[string]string{"Host": evil, "Authorization": "Bearer t"}})
	body = readBody(t, resp)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	assert.NotContains(t, body, "evil")
}
