package mcp

import "encoding/json"

// ProgressParams are the params of notifications/progress, sent for a
// request whose _meta holds a progress token (MetaProgressToken).
type ProgressParams struct {
	// ProgressToken is the request's token, a JSON string or integer,
	// echoed verbatim.
	ProgressToken json.RawMessage `json:"progressToken"`
	// Progress so far; it must increase with every notification, even if
	// Total is unknown.
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitzero"`
	Message  string   `json:"message,omitempty"` // 2025-03-26
	Meta     Meta     `json:"_meta,omitempty"`
}
