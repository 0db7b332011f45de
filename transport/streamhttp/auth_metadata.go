package streamhttp

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
)

// wellKnownPRM is the well-known path prefix of protected resource
// metadata (RFC 9728 §3).
const wellKnownPRM = "/.well-known/oauth-protected-resource"

// ProtectedResourceMetadata is the OAuth 2.0 Protected Resource Metadata
// document (RFC 9728) of an MCP server: it tells clients which
// authorization servers issue tokens for it.
type ProtectedResourceMetadata struct {
	// Resource is the server's resource identifier: the canonical URL of
	// its MCP endpoint, e.g. "https://mcp.example.com/mcp" (required).
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer URLs of the authorization
	// servers (at least one is required).
	AuthorizationServers []string `json:"authorization_servers"`
	// ScopesSupported are the scopes clients may request.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported defaults to ["header"]: tokens are accepted
	// only in the Authorization header.
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceName is a human-readable name of the server.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is the URL of documentation for developers.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// JWKSURI is the URL of the server's JSON Web Key Set, if it signs
	// responses.
	JWKSURI string `json:"jwks_uri,omitempty"`
}

// ProtectedResourceMetadataHandler returns a handler serving md as JSON to
// GET and HEAD (with CORS headers, so that browser-based clients can read
// it; OPTIONS answers the preflight), 405 otherwise. It panics if md lacks
// Resource or AuthorizationServers.
func ProtectedResourceMetadataHandler(md *ProtectedResourceMetadata) http.Handler {
	if md == nil || md.Resource == "" || len(md.AuthorizationServers) == 0 {
		panic("transport: ProtectedResourceMetadata needs Resource and at least one AuthorizationServers entry")
	}
	doc := *md
	doc.AuthorizationServers = slices.Clone(md.AuthorizationServers)
	doc.ScopesSupported = slices.Clone(md.ScopesSupported)
	if len(doc.BearerMethodsSupported) == 0 {
		doc.BearerMethodsSupported = []string{"header"}
	}
	body, err := json.Marshal(&doc)
	if err != nil {
		panic("transport: encoding ProtectedResourceMetadata: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			hdr.Set("Content-Type", "application/json")
			hdr.Set("Cache-Control", "public, max-age=3600")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				_, _ = w.Write(body)
			}
		case http.MethodOptions:
			hdr.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			hdr.Set("Access-Control-Allow-Headers", "MCP-Protocol-Version")
			w.WriteHeader(http.StatusNoContent)
		default:
			hdr.Set("Allow", "GET, HEAD, OPTIONS")
			writeHTTPError(w, exchange{}, http.StatusMethodNotAllowed, codeServerError, "Method Not Allowed")
		}
	})
}

// ProtectedResourceMetadataPaths returns the well-known paths where
// clients look for the metadata of resource (an absolute URL): the
// path-based location first (/.well-known/oauth-protected-resource/mcp for
// https://host/mcp), then the root one (/.well-known/oauth-protected-resource).
func ProtectedResourceMetadataPaths(resource string) []string {
	u, err := url.Parse(resource)
	if err != nil {
		return []string{wellKnownPRM}
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{wellKnownPRM}
	}
	return []string{wellKnownPRM + p, wellKnownPRM}
}

// HandleProtectedResourceMetadata registers the metadata handler for md on
// mux at every path of ProtectedResourceMetadataPaths(md.Resource), and
// returns the absolute URL of the first, for
// BearerOptions.ResourceMetadataURL.
func HandleProtectedResourceMetadata(mux *http.ServeMux, md *ProtectedResourceMetadata) string {
	h := ProtectedResourceMetadataHandler(md)
	paths := ProtectedResourceMetadataPaths(md.Resource)
	for _, p := range paths {
		mux.Handle(p, h)
	}
	u, err := url.Parse(md.Resource)
	if err != nil {
		return paths[0]
	}
	return u.Scheme + "://" + u.Host + paths[0]
}
