//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/keelmcp/keel/transport/streamhttp"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// A server mounted in a net/http server behind a bearer-token verifier,
// with its protected resource metadata, called by the Client over the
// streamable HTTP transport.
func Example_streamableHTTP() {
	type Greeting struct {
		Text string `json:"text"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "greet", "Greets the authenticated caller",
		func(ctx context.Context, _ struct{}) (Greeting, error) {
			return Greeting{Text: "hello, " + mcp.TokenInfoFromContext(ctx).Subject}, nil
		}, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Name: "greeter", Tools: reg, Logger: slog.New(slog.DiscardHandler)})

	// Tokens are checked by your verifier: JWT validation or introspection
	// against your authorization server. This one knows a single token.
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux) // your own http.Server in production
	defer hs.Close()
	resource := hs.URL + "/mcp" // the endpoint's canonical URL, e.g. https://mcp.example.com/mcp
	verifier := streamhttp.TokenVerifierFunc(func(_ context.Context, token string, _ *http.Request) (*transport.TokenInfo, error) {
		if token != "s3cret" {
			return nil, streamhttp.ErrInvalidToken
		}
		return &transport.TokenInfo{Subject: "ada", Scopes: []string{"greet"}, Audience: []string{resource}}, nil
	})
	metadataURL := streamhttp.HandleProtectedResourceMetadata(mux, &streamhttp.ProtectedResourceMetadata{
		Resource:             resource,
		AuthorizationServers: []string{"https://auth.example.com"},
		ScopesSupported:      []string{"greet"},
	})
	h := streamhttp.NewServerHandler(srv, nil) // stateful sessions, SSE when needed, DNS-rebinding protection
	defer h.Shutdown(context.Background())
	mux.Handle("/mcp", streamhttp.RequireBearer(verifier, &streamhttp.BearerOptions{
		Resource:            resource,
		ResourceMetadataURL: metadataURL,
		Scopes:              []string{"greet"},
	})(h))

	ctx := context.Background()
	c := mcp.NewClient(nil)
	err := c.Connect(ctx, streamhttp.NewClientTransport(hs.URL+"/mcp", &streamhttp.ClientOptions{BearerToken: "s3cret"}))
	if err != nil {
		panic(err)
	}
	res, _ := c.CallTool(ctx, "greet", nil)
	fmt.Println(res.Content[0].Text)
	c.Close()

	anonymous := mcp.NewClient(nil)
	err = anonymous.Connect(ctx, streamhttp.NewClientTransport(hs.URL+"/mcp", nil))
	var se *streamhttp.StatusError
	if errors.As(err, &se) {
		fmt.Println("without a token:", se.StatusCode, se.WWWAuthenticate == `Bearer scope="greet", resource_metadata="`+metadataURL+`"`)
	}
	// Output:
	// {"text":"hello, ada"}
	// without a token: 401 true
}
