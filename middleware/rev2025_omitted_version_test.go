//go:build keel_omit2025

package middleware

import "github.com/keelmcp/keel/mcp"

// testProtocolVersion is the revision the tests' clients ask for: built
// with keel_omit2025 the server serves 2026-07-28 only, so the tests that
// need only a client run at 2026-07-28.
const testProtocolVersion = mcp.Version20260728
