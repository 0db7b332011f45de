//go:build keel_omit2025

package middleware_test

import "github.com/keelmcp/keel/mcp"

// clientVersion is the revision the examples' and tests' clients ask
// for: built with keel_omit2025 the server serves 2026-07-28 only.
const clientVersion = mcp.Version20260728
