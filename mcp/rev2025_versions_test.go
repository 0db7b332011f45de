//go:build !keel_omit2025

package mcp_test

// servedVersions is what server/discover lists as supportedVersions and
// -32022 as data.supported: every revision served, newest first.
var servedVersions = []any{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// served2025 reports whether the 2025 rules are compiled in.
const served2025 = true
