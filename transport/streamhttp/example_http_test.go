package streamhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keelmcp/keel/transport/streamhttp"
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
