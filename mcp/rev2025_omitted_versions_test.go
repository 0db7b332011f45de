//go:build keel_omit2025

package mcp_test

// servedVersions is what server/discover lists as supportedVersions and
// -32022 as data.supported: built with keel_omit2025, revision 2026-07-28
// alone.
var servedVersions = []any{"2026-07-28"}

// served2025 reports whether the 2025 rules are compiled in.
const served2025 = false
