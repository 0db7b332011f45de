// Package revision holds the rules of the MCP protocol revisions that
// package mcp and its transports (streamable HTTP) both apply, so that
// each rule has one owner: which revision a message follows (the era test
// and the _meta classifier), what the _meta of a per-request revision must
// carry, where batches are accepted, and the HTTP status of a per-request
// revision's error.
//
// Revisions are dates and compare as strings. From 2026-07-28 on, a
// revision is named per request (in params._meta) and nothing is
// negotiated; the revisions before it are negotiated per connection by
// initialize.
package revision

// The revisions keel serves, newest first (package mcp exports them as
// mcp.Version20260728 and so on).
const (
	V20260728 = "2026-07-28"
	V20251125 = "2025-11-25"
	V20250618 = "2025-06-18"
	V20250326 = "2025-03-26"
	V20241105 = "2024-11-05"
)

// PerRequestVersions lists the revisions served per request, newest first.
var PerRequestVersions = []string{V20260728}

// NegotiatedVersions lists the revisions initialize negotiates, newest
// first.
var NegotiatedVersions = []string{V20251125, V20250618, V20250326, V20241105}

// PerRequest reports whether revision v belongs to the per-request era:
// 2026-07-28 or later. It is the one era test of keel: an unknown later
// revision is of this era too, and is then refused with -32022
// (ServedPerRequest is false for it).
func PerRequest(v string) bool { return v >= V20260728 }

// ServedPerRequest reports whether v is a per-request revision keel serves.
func ServedPerRequest(v string) bool { return contains(PerRequestVersions, v) }

// Negotiated reports whether v is a revision initialize negotiates.
func Negotiated(v string) bool { return contains(NegotiatedVersions, v) }

// AtLeast reports whether revision v is min or newer.
func AtLeast(v, min string) bool { return v >= min }

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// Served reports whether a request that names revision v in its _meta is
// served by a server that supports the revisions in supported: v is of the
// per-request era (PerRequest) and listed. A revision of the negotiated
// era is never named per request, so it is not served in this form even
// when listed.
func Served(supported []string, v string) bool { return PerRequest(v) && contains(supported, v) }

// UnsupportedVersion is the -32022 refusal of a request that names
// revision v, which the server does not serve per request (Served is
// false); quote writes v into the message as the caller's medium needs it.
// The error's data lists the supported revisions and the one requested
// (each side builds it with its correlationId).
func UnsupportedVersion(v string, quote func(string) string) *Refusal {
	return &Refusal{Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version: " + quote(v)}
}

// PrimingEvents reports whether negotiated revision v has priming events
// and closes a stream before its response (2025-11-25 and later).
func PrimingEvents(v string) bool { return v != "" && AtLeast(v, V20251125) }

// DefaultHeaderVersion is the revision of a 2025 request over HTTP that
// sends no MCP-Protocol-Version header.
const DefaultHeaderVersion = V20250326

// BatchAllowed reports whether a batch is accepted under revision v: only
// 2025-03-26 has batches.
func BatchAllowed(v string) bool { return v == V20250326 }

// BatchRefused is the message of the -32600 that refuses a batch under any
// other revision.
const BatchRefused = "Invalid Request: batches are accepted only in protocol revision " + V20250326

// BatchRefusedPerRequest is the message of the -32600 that refuses a batch
// of the per-request era.
const BatchRefusedPerRequest = "Invalid Request: batches are not accepted in protocol revision " + V20260728 + " and later"

// Error codes of the per-request revisions (over HTTP all three answer 400).
const (
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// codeMethodNotFound is JSON-RPC's -32601.
const codeMethodNotFound = -32601

// ErrorStatus returns the HTTP status of the answer to a per-request
// revision's request whose error code is code (0: not an error): 404 for
// -32601 (method not found), 400 for -32020, -32021 and -32022, 200
// otherwise. (The numbers are written out so that package mcp, which
// imports this one, does not import net/http.)
func ErrorStatus(code int64) int {
	switch code {
	case codeMethodNotFound:
		return 404 // Not Found
	case CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return 400 // Bad Request
	}
	return 200 // OK
}
