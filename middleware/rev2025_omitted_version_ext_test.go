//go:build keel_omit2025

package middleware_test

import "github.com/keelmcp/keel/mcp"

// clientVersion is the revision the examples' and tests' clients ask
// for: built with keel_omit2025 the server serves 2026-07-28 only.
const clientVersion = mcp.Version20260728

// sessionListChanged reports whether the tests' client hears of a changed
// tool list without subscribing: a 2026-07-28 client outside a subscriptions/listen stream gets none.
const sessionListChanged = false
