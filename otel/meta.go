package otel

import (
	"encoding/json"
)

// metaProtocolVersion is the _meta key a 2026-07-28 request names its
// revision by (mcp.MetaProtocolVersion).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// params are the members of a request's params the instrumentation reads:
// the target of the span name and the _meta property bag. A member of
// another type (a custom method's "name" object) is left empty.
type params struct {
	Name string                     `json:"name"`
	URI  string                     `json:"uri"`
	Meta map[string]json.RawMessage `json:"_meta"`
	// RequestID is the id a notifications/cancelled names.
	RequestID json.RawMessage `json:"requestId"`
}

// parseParams decodes raw params; malformed or absent params leave p
// empty (the Server answers them; tracing only reads what is there).
func parseParams(raw []byte) params {
	var p params
	if len(raw) > 0 && raw[0] == '{' {
		_ = json.Unmarshal(raw, &p)
	}
	return p
}

// metaCarrier is params._meta as a propagation.TextMapCarrier: Get reads
// string members, Set writes string members.
type metaCarrier map[string]json.RawMessage

// Get returns the string member key ("" when absent or not a string).
func (m metaCarrier) Get(key string) string {
	v, ok := m[key]
	if !ok || len(v) == 0 || v[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// Set writes the string member key.
func (m metaCarrier) Set(key, value string) {
	b, _ := json.Marshal(value) // a string always encodes
	m[key] = b
}

// Keys lists the members.
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// idString is the jsonrpc.request.id of a raw id: a string id unquoted,
// a number as written, "" for null or absent.
func idString(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}
