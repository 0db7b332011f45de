//go:build !keel_omit2025

package middleware_test

// clientVersion is the revision the examples' and tests' clients ask
// for: the client's default (a 2025 revision, negotiated by initialize)
// when the 2025 rules are compiled in.
const clientVersion = ""

// sessionListChanged reports whether the tests' client hears of a changed
// tool list without subscribing: a 2025 session gets notifications/tools/list_changed.
const sessionListChanged = true
