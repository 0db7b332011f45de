//go:build !keel_omit2025

package middleware

// testProtocolVersion is the revision the tests' clients ask for: the
// client's default (a 2025 revision, negotiated by initialize) when the
// 2025 rules are compiled in.
const testProtocolVersion = ""
