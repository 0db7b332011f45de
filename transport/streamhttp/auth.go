package streamhttp

import (
	"context"
	"errors"
	"github.com/keelmcp/keel/transport"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// TokenInfo is what a TokenVerifier learned about a bearer token (defined in
// package transport so that servers can read it without importing HTTP).
type TokenInfo = transport.TokenInfo

// WithTokenInfo returns ctx carrying info (RequireBearer does this for each
// authenticated request).
func WithTokenInfo(ctx context.Context, info *TokenInfo) context.Context {
	return transport.WithTokenInfo(ctx, info)
}

// TokenInfoFromContext returns the verified token of the request ctx
// belongs to, or nil when the request was not authenticated by
// RequireBearer.
func TokenInfoFromContext(ctx context.Context) *TokenInfo { return transport.TokenInfoFromContext(ctx) }

// TokenVerifier checks a bearer token: signature or introspection,
// issuer, expiry, and that the token was issued for this server (its
// audience, RFC 8707). It returns an error wrapping ErrInvalidToken for a
// token it rejects (401); any other error is a failure of the verifier
// itself (500). r is the request carrying the token, for verifiers that
// need more than the token (DPoP, mTLS); most ignore it.
type TokenVerifier interface {
	Verify(ctx context.Context, token string, r *http.Request) (*TokenInfo, error)
}

// TokenVerifierFunc adapts a function to TokenVerifier.
type TokenVerifierFunc func(ctx context.Context, token string, r *http.Request) (*TokenInfo, error)

// Verify calls f.
func (f TokenVerifierFunc) Verify(ctx context.Context, token string, r *http.Request) (*TokenInfo, error) {
	return f(ctx, token, r)
}

// ErrInvalidToken is the error a TokenVerifier wraps to reject a token
// (invalid, expired, revoked, or issued for another resource): the client
// gets 401 with error="invalid_token".
var ErrInvalidToken = errors.New("transport: invalid access token")

// BearerOptions configures RequireBearer (nil = defaults).
type BearerOptions struct {
	// ResourceMetadataURL is the absolute URL of this server's protected
	// resource metadata (RFC 9728), named in every challenge. Empty means
	// derived from Resource at its path-based well-known location:
	// https://mcp.example.com/mcp gives
	// https://mcp.example.com/.well-known/oauth-protected-resource/mcp.
	// A challenge never names the request's Host, which a peer chooses.
	ResourceMetadataURL string
	// Scopes are required on every request: a token lacking one gets 403
	// with error="insufficient_scope". They are also named in 401
	// challenges (scope=...), telling clients what to ask for.
	Scopes []string
	// Resource is the canonical URL of this MCP endpoint, e.g.
	// "https://mcp.example.com/mcp" (required: RequireBearer panics
	// without it). A token is admitted only when Resource is among its
	// Audience (RFC 8707), so that a token issued for another server is
	// refused with 401.
	Resource string
	// Now is the clock for expiry checks (nil = time.Now).
	Now func() time.Time
	// Logger receives refusals at debug level (at most
	// DefaultRefusalLogsPerSecond lines a second) and verifier failures
	// at error level (nil = slog.Default()).
	Logger *slog.Logger
}

// RequireBearer returns middleware that admits only requests carrying a
// valid OAuth 2.1 bearer token in the Authorization header (never a query
// string), as an MCP server acting as an OAuth resource server must
// (2025-06-18 and later):
//
//   - no token: 401 with WWW-Authenticate: Bearer resource_metadata="...",
//     scope="..." (the scope when Scopes is set);
//   - a malformed Authorization header, or a token in the query string:
//     400 with error="invalid_request";
//   - a token the verifier rejects, expired, for another resource, or
//     naming neither a subject nor a client id: 401 with
//     error="invalid_token";
//   - a token without the required Scopes: 403 with
//     error="insufficient_scope", scope and resource_metadata;
//   - a verifier failure: 500.
//
// An admitted request continues with the TokenInfo in its context
// (TokenInfoFromContext). The token's subject, else its client id, is the
// request's peer (transport.Peer): sessions are bound to it, and every
// per-peer bound counts against it.
//
// Bearer auth without an audience would admit any token the verifier
// accepts, whatever server it was issued for: RequireBearer panics when
// opts lacks Resource, or when Resource or ResourceMetadataURL is not an
// absolute http(s) URL. Challenges name only these configured URLs, never
// the request's Host, so RequireBearer may wrap the Handler (whose Host and
// Origin checks then run after it) without echoing an unchecked Host.
func RequireBearer(v TokenVerifier, opts *BearerOptions) func(http.Handler) http.Handler {
	var o BearerOptions
	if opts != nil {
		o = *opts
	}
	if o.Resource == "" {
		panic("transport: RequireBearer needs BearerOptions.Resource, the canonical URL of this MCP endpoint " +
			`(e.g. "https://mcp.example.com/mcp"): tokens must name it in their audience`)
	}
	if !isAbsoluteHTTPURL(o.Resource) {
		panic("transport: BearerOptions.Resource must be an absolute http(s) URL without a fragment, got " + quoteHeader(o.Resource))
	}
	if o.ResourceMetadataURL == "" {
		o.ResourceMetadataURL = metadataURLOf(o.Resource)
	} else if !isAbsoluteHTTPURL(o.ResourceMetadataURL) {
		panic("transport: BearerOptions.ResourceMetadataURL must be an absolute http(s) URL, got " + quoteHeader(o.ResourceMetadataURL))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Scopes = slices.Clone(o.Scopes)
	refusals := newRefusalLog(o.Logger, slog.LevelDebug, DefaultRefusalLogsPerSecond)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, problem := bearerToken(r)
			switch problem {
			case "missing":
				o.challenge(w, r, http.StatusUnauthorized, "", "")
				return
			case "":
			default:
				cid := o.challenge(w, r, http.StatusBadRequest, "invalid_request", problem)
				refusals.print("transport: malformed bearer credentials", slog.String("problem", problem), correlationAttr(cid))
				return
			}
			info, err := v.Verify(r.Context(), token, r)
			switch {
			case err != nil && errors.Is(err, ErrInvalidToken):
				cid := o.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token is invalid")
				refusals.print("transport: bearer token refused", clipped("error", err.Error()), correlationAttr(cid))
				return
			case err != nil:
				cid := writeHTTPError(w, exchange{}, http.StatusInternalServerError, codeServerError, "Internal Server Error: token verification failed")
				o.Logger.Error("transport: token verification failed", "error", err, correlationAttr(cid))
				return
			case info == nil:
				o.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token is invalid")
				return
			case info.Subject == "" && info.ClientID == "":
				// Without either, its holders could not be told apart:
				// they would share sessions, tasks and quotas.
				cid := o.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token names no subject or client")
				refusals.print("transport: bearer token refused: it names neither a subject nor a client id", correlationAttr(cid))
				return
			}
			if !info.Expiry.IsZero() && !o.Now().Before(info.Expiry) {
				o.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token has expired")
				return
			}
			if !slices.Contains(info.Audience, o.Resource) {
				o.challenge(w, r, http.StatusUnauthorized, "invalid_token", "the access token was not issued for this resource")
				return
			}
			for _, s := range o.Scopes {
				if !info.HasScope(s) {
					o.challenge(w, r, http.StatusForbidden, "insufficient_scope", "the access token lacks a required scope")
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(WithTokenInfo(r.Context(), info)))
		})
	}
}

// bearerToken extracts the token of an "Authorization: Bearer" header; the
// problem is "missing" when there are no credentials at all, else a
// description of malformed credentials ("" when fine).
func bearerToken(r *http.Request) (token, problem string) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		if r.URL.Query().Has("access_token") {
			return "", "access tokens are accepted only in the Authorization header"
		}
		return "", "missing"
	}
	if len(vals) > 1 {
		return "", "more than one Authorization header"
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", "the Authorization scheme must be Bearer"
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || !isToken68(tok) {
		return "", "malformed bearer token"
	}
	if r.URL.Query().Has("access_token") {
		return "", "access tokens are accepted only in the Authorization header"
	}
	return tok, ""
}

// isToken68 reports whether s matches RFC 6750's b64token syntax.
func isToken68(s string) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			i++
			continue
		}
		break
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return i == len(s) && i > 0
}

// challenge answers with status and a Bearer WWW-Authenticate challenge
// naming the protected resource metadata (and error, scope when known);
// it returns the correlation id of the error body.
func (o *BearerOptions) challenge(w http.ResponseWriter, r *http.Request, status int, errCode, desc string) string {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	param := func(name, value string) {
		b.WriteString(sep)
		b.WriteString(name)
		b.WriteString(`="`)
		for _, c := range value {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		}
		b.WriteByte('"')
		sep = ", "
	}
	if errCode != "" {
		param("error", errCode)
		if desc != "" {
			param("error_description", desc)
		}
	}
	if len(o.Scopes) > 0 {
		param("scope", strings.Join(o.Scopes, " "))
	}
	param("resource_metadata", o.ResourceMetadataURL)
	w.Header().Set("WWW-Authenticate", b.String())
	msg := http.StatusText(status)
	if desc != "" {
		msg += ": " + desc
	}
	return writeHTTPError(w, exchange{}, status, codeServerError, msg)
}

// isAbsoluteHTTPURL reports whether s is an absolute http or https URL
// with a host and no fragment.
func isAbsoluteHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.Fragment == "" && u.User == nil
}

// metadataURLOf returns the path-based well-known URL of the protected
// resource metadata of resource (an absolute URL).
func metadataURLOf(resource string) string {
	u, _ := url.Parse(resource)
	return u.Scheme + "://" + u.Host + ProtectedResourceMetadataPaths(resource)[0]
}
