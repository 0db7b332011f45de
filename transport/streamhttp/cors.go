package streamhttp

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultCORSMaxAge is how long a browser may cache a preflight answer
// unless CORSOptions says otherwise.
const DefaultCORSMaxAge = 10 * time.Minute

// CORSOptions configures CORS (nil = defaults).
type CORSOptions struct {
	// AllowedOrigins lists the origins whose pages may call the endpoint
	// from a browser, in the form of Options.AllowedOrigins: an origin
	// "https://app.example.com" matches exactly, a bare host name any
	// scheme and port, "*" anything. Nil means localhost, 127.0.0.1 and
	// ::1. Keep it consistent with the Handler's AllowedOrigins, which
	// refuses (403) any other Origin.
	AllowedOrigins []string
	// MaxAge is how long a browser may cache a preflight answer (default
	// DefaultCORSMaxAge).
	MaxAge time.Duration
}

// CORS headers for the streamable HTTP transport: the methods of its one
// endpoint, the request headers a client sends, and the response headers a
// browser client must be able to read (the session id, and the challenge
// of a 401 or 403).
const (
	corsAllowMethods  = "GET, POST, DELETE"
	corsAllowHeaders  = "Accept, Authorization, Content-Type, Last-Event-ID, Mcp-Method, Mcp-Name, Mcp-Protocol-Version, Mcp-Session-Id"
	corsExposeHeaders = "Mcp-Session-Id, WWW-Authenticate"
)

// CORS returns middleware that lets browser pages of the allowed origins
// use an MCP endpoint: it answers preflight requests (OPTIONS with
// Access-Control-Request-Method) itself, 204 for an allowed origin and 403
// for another, and adds Access-Control-Allow-Origin (the caller's origin,
// never "*") and Access-Control-Expose-Headers to the other responses to
// an allowed origin. Requests without Origin pass through untouched. Put
// it outside RequireBearer, so that preflights, which carry no token, are
// answered and 401 challenges are readable:
//
//	mux.Handle("/mcp", streamhttp.CORS(nil)(streamhttp.RequireBearer(v, nil)(h)))
func CORS(opts *CORSOptions) func(http.Handler) http.Handler {
	var o CORSOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultCORSMaxAge
	}
	origins := newOriginList(o.AllowedOrigins)
	maxAge := strconv.Itoa(int(o.MaxAge / time.Second))
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin == "" {
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h.Add("Vary", "Origin")
			preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
			if !origins.allows(origin) {
				if preflight {
					writeHTTPError(w, exchange{}, http.StatusForbidden, codeServerError, "Forbidden: Origin not allowed")
					return
				}
				next.ServeHTTP(w, r) // no CORS headers: the browser keeps the answer from the page
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			if preflight {
				h.Add("Vary", "Access-Control-Request-Method")
				h.Add("Vary", "Access-Control-Request-Headers")
				h.Set("Access-Control-Allow-Methods", corsAllowMethods)
				h.Set("Access-Control-Allow-Headers", corsAllowHeaders+paramHeadersRequested(r))
				h.Set("Access-Control-Max-Age", maxAge)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			next.ServeHTTP(w, r)
		})
	}
}

// paramHeadersRequested returns ", " and the Mcp-Param-* headers (SEP-2243
// x-mcp-header) a preflight asks for, or "": their names depend on the
// tools, so they are allowed as requested when they are well-formed.
func paramHeadersRequested(r *http.Request) string {
	var b strings.Builder
	for _, v := range r.Header.Values("Access-Control-Request-Headers") {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if len(name) > len("mcp-param-") && len(name) <= 128 &&
				strings.EqualFold(name[:len("mcp-param-")], "mcp-param-") && isToken(name) {
				b.WriteString(", ")
				b.WriteString(name)
			}
		}
	}
	return b.String()
}

// isToken reports whether s is an HTTP token (RFC 9110 tchar).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// originList matches Origin header values against a list in the form of
// Options.AllowedOrigins.
type originList struct {
	entries []string // lower case: origins ("scheme://host[:port]") and bare host names
	any     bool
}

func newOriginList(list []string) originList {
	entries, anyOrigin := normalizeList(list, defaultLocalHosts)
	return originList{entries: entries, any: anyOrigin}
}

// allows reports whether origin is on the list.
func (l originList) allows(origin string) bool {
	if l.any {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	o := strings.ToLower(origin)
	name := strings.ToLower(u.Hostname())
	for _, a := range l.entries {
		if a == o || (!strings.Contains(a, "://") && a == name) {
			return true
		}
	}
	return false
}
