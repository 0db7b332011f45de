package keel

import (
	"slices"
	"strings"
)

// RedactedValue replaces the value of every redacted key.
const RedactedValue = "[REDACTED]"

// Placeholders used where a value cannot be walked safely.
const (
	truncatedValue   = "[TRUNCATED]"    // nesting deeper than maxRedactDepth
	cycleValue       = "[CYCLE]"        // a pointer, map or slice that contains itself
	invalidJSONValue = "[INVALID JSON]" // raw JSON that does not parse (its members cannot be checked)
	maxRedactDepth   = 32               // containers nested deeper than this are truncated
)

// defaultRedactKeys is the default denylist, in lower case. Matching is
// case-insensitive, so "Authorization", "API_KEY" and "apiKey" are covered by
// "authorization", "api_key" and "apikey".
var defaultRedactKeys = []string{
	// passwords and generic secrets
	"password", "passwd", "passphrase", "secret", "client_secret", "clientsecret",
	"secret_key", "secretkey", "private_key", "privatekey",
	// tokens
	"token", "access_token", "accesstoken", "refresh_token", "refreshtoken",
	"id_token", "idtoken", "auth_token", "authtoken", "bearer",
	// API keys
	"api_key", "apikey", "api-key", "x-api-key",
	// HTTP credentials and sessions
	"authorization", "proxy-authorization", "cookie", "set-cookie",
	"session_id", "sessionid", "session_token", "mcp-session-id",
	// credentials
	"credential", "credentials",
}

// DefaultRedactKeys returns a copy of the default denylist used when no keys
// are configured: names of values that must never reach a log.
//
// The list is password, passwd, passphrase, secret, client_secret,
// clientsecret, secret_key, secretkey, private_key, privatekey, token,
// access_token, accesstoken, refresh_token, refreshtoken, id_token, idtoken,
// auth_token, authtoken, bearer, api_key, apikey, api-key, x-api-key,
// authorization, proxy-authorization, cookie, set-cookie, session_id,
// sessionid, session_token, mcp-session-id, credential and credentials.
// Keys match exactly but case-insensitively: "apiKey" matches "apikey", while
// "api_key_hint" matches nothing.
func DefaultRedactKeys() []string { return slices.Clone(defaultRedactKeys) }

var defaultKeySet = newKeySet(defaultRedactKeys)

// keySet is a case-insensitive set of keys, built once and shared read-only.
// ASCII keys (the usual case) are matched through a map of lower-cased keys
// without allocating; other keys fall back to strings.EqualFold.
type keySet struct {
	lower  map[string]struct{} // ASCII keys, lower-cased
	lens   uint64              // bit n: some ASCII key has length n (63: 63 or more)
	folded []string            // non-ASCII keys
	all    []string            // every key, for non-ASCII input
}

func newKeySet(keys []string) *keySet {
	s := &keySet{lower: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		if k == "" {
			continue
		}
		s.all = append(s.all, k)
		if isASCII(k) {
			s.lower[strings.ToLower(k)] = struct{}{}
			s.lens |= lenBit(len(k))
		} else {
			s.folded = append(s.folded, k)
		}
	}
	return s
}

func lenBit(n int) uint64 { return 1 << uint(min(n, 63)) }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// match reports whether k is in the set, ignoring case.
func (s *keySet) match(k string) bool {
	if s == nil || len(s.all) == 0 || k == "" {
		return false
	}
	if !isASCII(k) {
		for _, x := range s.all {
			if strings.EqualFold(k, x) {
				return true
			}
		}
		return false
	}
	for _, x := range s.folded {
		if strings.EqualFold(k, x) {
			return true
		}
	}
	if s.lens&lenBit(len(k)) == 0 {
		return false
	}
	if _, ok := s.lower[k]; ok {
		return true
	}
	if len(k) > 64 {
		_, ok := s.lower[strings.ToLower(k)]
		return ok
	}
	var buf [64]byte
	b := buf[:len(k)]
	upper := false
	for i := 0; i < len(k); i++ {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
			upper = true
		}
		b[i] = c
	}
	if !upper {
		return false
	}
	_, ok := s.lower[string(b)] // no allocation: map index by converted []byte
	return ok
}

// Redact returns v with the value of every key in keys replaced by
// RedactedValue, at any depth. keys match case-insensitively; nil keys means
// DefaultRedactKeys, an empty non-nil slice redacts nothing.
//
// Redact walks maps with string-like keys (map[string]any and any other map
// kind; other key kinds are stringified), slices and arrays, structs (their
// exported fields, under their `json` tag names, embedded structs flattened,
// "-" fields skipped), pointers and interfaces, slog.LogValuer values
// (resolved first) and raw JSON (json.RawMessage, or the same bytes under another named type: member
// names are matched, numbers kept as written).
//
// Redact is copy-on-write: v itself is never modified. When nothing needs
// redacting, v is returned as is; otherwise the changed parts come back as
// generic values (map[string]any for maps and structs, []any for slices) and
// the unchanged parts are shared with v. Values with their own encoding
// (json.Marshaler, encoding.TextMarshaler, time.Time, errors, []byte) are
// leaves. Containers nested deeper than 32 levels become "[TRUNCATED]", a
// container that contains itself becomes "[CYCLE]".
//
// Redact does not sanitize strings; see Sanitize and NewRedactingHandler,
// which does both.
func Redact(v any, keys []string) any {
	ks := defaultKeySet
	if keys != nil {
		ks = newKeySet(keys)
	}
	w := walker{keys: ks}
	out, _ := w.redactAny(v, 0)
	return out
}

// Sanitize returns s with every control character escaped as a six-character
// Unicode escape in lower-case hex: "\n" becomes `\u000a`, "\r" `\u000d`,
// "\t" `\u0009`. Escaped are U+0000–U+001F, U+007F and the C1 controls
// U+0080–U+009F, so a logged string can neither break a log line nor smuggle
// terminal control sequences. Everything else, including invalid UTF-8, is
// kept byte for byte. When s has nothing to escape it is returned without
// allocating.
//
// Sanitize is meant for log output; it is not an encoder and not reversible
// (a literal `\u000a` in s stays as it is).
func Sanitize(s string) string {
	i := firstControl(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 10)
	start := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f:
			b.WriteString(s[start:i])
			writeEscape(&b, c)
			i++
			start = i
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			// U+0080–U+009F is encoded as 0xC2 followed by the code point.
			b.WriteString(s[start:i])
			writeEscape(&b, s[i+1])
			i += 2
			start = i
		default:
			i++
		}
	}
	b.WriteString(s[start:])
	return b.String()
}

// needsSanitize reports whether Sanitize would change s.
func needsSanitize(s string) bool { return firstControl(s) >= 0 }

func firstControl(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || (c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f) {
			return i
		}
	}
	return -1
}

const hexDigits = "0123456789abcdef"

func writeEscape(b *strings.Builder, c byte) {
	b.WriteString(`\u00`)
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&0xf])
}
