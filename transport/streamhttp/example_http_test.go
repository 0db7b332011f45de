package streamhttp_test

import (
	"context"
	"fmt"
	"github.com/keelmcp/keel/transport/streamhttp"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keelmcp/keel/transport"
)

// An endpoint protected by a bearer verifier, and its protected resource
// metadata at the well-known path: a client without a token learns where
// to get one.
func ExampleRequireBearer() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resource := srv.URL + "/mcp" // the canonical URL of the endpoint: tokens name it in their audience
	verifier := streamhttp.TokenVerifierFunc(func(_ context.Context, token string, _ *http.Request) (*streamhttp.TokenInfo, error) {
		if token != "s3cret" {
			return nil, streamhttp.ErrInvalidToken
		}
		return &streamhttp.TokenInfo{Subject: "ada", Audience: []string{resource}}, nil
	})
	metadataURL := streamhttp.HandleProtectedResourceMetadata(mux, &streamhttp.ProtectedResourceMetadata{
		Resource:             resource,
		AuthorizationServers: []string{"https://auth.example.com"},
	})
	endpoint := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An mcp.Server's Handler goes here; its tool handlers see
		// the same TokenInfo in their context.
		fmt.Fprintf(w, "hello, %s", streamhttp.TokenInfoFromContext(r.Context()).Subject)
	})
	mux.Handle("/mcp", streamhttp.RequireBearer(verifier, &streamhttp.BearerOptions{Resource: resource, ResourceMetadataURL: metadataURL})(endpoint))

	resp, _ := http.Post(srv.URL+"/mcp", "application/json", nil)
	resp.Body.Close()
	challenge := resp.Header.Get("WWW-Authenticate")
	fmt.Println(resp.StatusCode, strings.Replace(challenge, srv.URL, "http://HOST", 1))

	resp, _ = http.Get(metadataURL)
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(strings.ReplaceAll(string(doc), srv.URL, "http://HOST"))

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, _ = http.DefaultClient.Do(req)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 401 Bearer resource_metadata="http://HOST/.well-known/oauth-protected-resource/mcp"
	// {"resource":"http://HOST/mcp","authorization_servers":["https://auth.example.com"],"bearer_methods_supported":["header"]}
	// 200 hello, ada
}

// Every bound has a default; a request beyond one is refused with a
// JSON-RPC error naming it. Here a handler admits one session.
func ExampleOptions_limits() {
	serve := func(ctx context.Context, t transport.Transport) error {
		defer t.Close()
		for {
			msg, err := t.Read(ctx)
			if err != nil {
				return nil
			}
			if strings.Contains(string(msg), `"initialize"`) {
				_ = t.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`))
			}
		}
	}
	h := streamhttp.NewHandler(&streamhttp.Options{Serve: serve, MaxSessions: 1, Logger: slog.New(slog.DiscardHandler)})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	initialize := func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	initialize()
	initialize()
	fmt.Println(streamhttp.DefaultMaxSessions, streamhttp.DefaultInitTimeout, streamhttp.DefaultBodyReadTimeout)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}
	// 503 {"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Service Unavailable: too many sessions (MaxSessions = 1)","data":{"limit":"MaxSessions","max":1}}}
	// 10000 10s 30s
}
