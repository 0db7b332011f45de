package otel

import (
	"bytes"
	"encoding/json"
)

// metaProtocolVersion is the _meta key a 2026-07-28 request names its
// revision by.
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
	// RequestState is the state a later input_required round sends back;
	// TaskID the task a tasks/* request is about.
	RequestState string `json:"requestState"`
	TaskID       string `json:"taskId"`
}

// parseParams decodes raw params; malformed or absent params leave p
// empty (the Server answers them; tracing only reads what is there).
func parseParams(raw []byte) *params {
	p := new(params)
	if len(raw) > 0 && raw[0] == '{' {
		_ = json.Unmarshal(raw, p)
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

// scanHead returns the raw id and the method of a JSON-RPC message
// without decoding it: it walks the top-level members only, skipping their
// values. ok is false when msg is not a well-formed-looking object; a
// method holding escapes is decoded properly.
func scanHead(msg []byte) (id []byte, method string, ok bool) {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return nil, "", false
	}
	i++
	for {
		i = skipSpace(msg, i)
		if i < len(msg) && msg[i] == '}' {
			return id, method, true
		}
		ks, ke, okk := scanString(msg, i)
		if !okk {
			return nil, "", false
		}
		i = skipSpace(msg, ke)
		if i >= len(msg) || msg[i] != ':' {
			return nil, "", false
		}
		vs := skipSpace(msg, i+1)
		ve, okv := skipValue(msg, vs)
		if !okv {
			return nil, "", false
		}
		switch string(msg[ks:ke]) { // no allocation: compared in place
		case `"id"`:
			id = msg[vs:ve]
		case `"method"`:
			if msg[vs] == '"' {
				if bytes.IndexByte(msg[vs+1:ve-1], '\\') < 0 {
					method = internMethod(msg[vs+1 : ve-1])
				} else if method, ok = unquote(msg[vs:ve]); !ok {
					return nil, "", false
				}
			}
		}
		i = skipSpace(msg, ve)
		if i < len(msg) && msg[i] == ',' {
			i++
			continue
		}
		if i < len(msg) && msg[i] == '}' {
			return id, method, true
		}
		return nil, "", false
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the bounds of the string starting at b[i] (quotes
// included).
func scanString(b []byte, i int) (start, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return i, j + 1, true
		}
	}
	return 0, 0, false
}

// skipValue returns the end of the value starting at b[i]: a string, an
// object or array (nesting counted, strings skipped), or a literal.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		_, e, ok := scanString(b, i)
		return e, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				_, e, ok := scanString(b, j)
				if !ok {
					return 0, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j, j > i
}

// internMethod returns b as a string, without allocating for the methods
// a client sends most.
func internMethod(b []byte) string {
	switch string(b) { // compared in place
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "resources/read":
		return "resources/read"
	case "resources/list":
		return "resources/list"
	case "prompts/get":
		return "prompts/get"
	case "prompts/list":
		return "prompts/list"
	case "ping":
		return "ping"
	case "tasks/get":
		return "tasks/get"
	case "tasks/result":
		return "tasks/result"
	case "completion/complete":
		return "completion/complete"
	case "notifications/progress":
		return "notifications/progress"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/message":
		return "notifications/message"
	}
	return string(b)
}

// unquote decodes a JSON string with escapes (kept apart so that
// scanHead's results do not escape to the heap).
func unquote(b []byte) (string, bool) {
	var s string
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}
