package mcp

import (
	"bytes"
	"encoding/json"
	"maps"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// correlationMember is the member of error.data that carries the
// correlation id of the request an error answers.
const correlationMember = "correlationId"

// correlateData returns the error data to send for data so that it carries
// the correlation id of the request it answers (id), and true, or false
// when data is to be sent as it is. conn is the connection's id: a
// StructuredError carrying it had it stand in for the request's. The
// caller's value is never changed; what gains the id is a copy.
//
//   - nil: {"correlationId": id}.
//   - keel's own data types (correlated): a copy with the id, if they have
//     none.
//   - a StructuredError (pointer or value) without an id, or with the
//     connection's: a copy with the request's.
//   - a map[string]any, or a raw JSON object (json.RawMessage,
//     jsontext.Value), without a "correlationId" member: a copy with it
//     added.
//   - anything else (a string, an array, a struct of the handler's): as
//     it is.
func correlateData(data any, id, conn func() string) (any, bool) {
	switch d := data.(type) {
	case nil:
		return protoErrData{CorrelationID: id()}, true
	case correlated:
		if v := d.correlatedWith(id); v != nil {
			return v, true
		}
	case *StructuredError:
		if d == nil {
			return protoErrData{CorrelationID: id()}, true
		}
		if c, ok := structuredCorrelation(d.CorrelationID, id, conn); ok {
			se := *d
			se.CorrelationID = c
			return &se, true
		}
	case StructuredError:
		if c, ok := structuredCorrelation(d.CorrelationID, id, conn); ok {
			d.CorrelationID = c
			return &d, true
		}
	case map[string]any:
		if _, has := d[correlationMember]; !has {
			m := maps.Clone(d)
			if m == nil {
				m = make(map[string]any, 1)
			}
			m[correlationMember] = id()
			return m, true
		}
	case json.RawMessage:
		if v, ok := rawWithCorrelation(d, id); ok {
			return json.RawMessage(v), true
		}
	case jsontext.Value:
		if v, ok := rawWithCorrelation(d, id); ok {
			return jsontext.Value(v), true
		}
	}
	return nil, false
}

// structuredCorrelation returns the id a StructuredError whose id is have
// should carry instead, and true; false when have is the request's own.
func structuredCorrelation(have string, id, conn func() string) (string, bool) {
	if have != "" && have != conn() {
		return "", false
	}
	c := id()
	return c, c != have
}

// rawWithCorrelation returns a copy of raw with a "correlationId" member
// of id() added first, and true, when raw is a JSON object without that
// member; false for any other value (which is sent as it is).
func rawWithCorrelation(raw []byte, id func() string) ([]byte, bool) {
	members, ok := rawObject(raw)
	if !ok {
		return nil, false
	}
	if _, has := members[correlationMember]; has {
		return nil, false
	}
	q, err := jsontext.AppendQuote(nil, id())
	if err != nil { // an id that is not valid UTF-8: leave the data alone
		return nil, false
	}
	body := bytes.TrimLeft(raw, " \t\r\n")[1:] // after the '{'
	out := make([]byte, 0, len(raw)+len(correlationMember)+len(q)+4)
	out = append(out, `{"`+correlationMember+`":`...)
	out = append(out, q...)
	if len(members) > 0 {
		out = append(out, ',')
	} else {
		body = []byte{'}'}
	}
	return append(out, body...), true
}

// rawObject decodes raw as a JSON object (its members, undecoded), or
// reports false when it is anything else.
func rawObject(raw []byte) (map[string]jsontext.Value, bool) {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return nil, false
	}
	var members map[string]jsontext.Value
	if jsonv2.Unmarshal(raw, &members) != nil {
		return nil, false
	}
	return members, true
}

// dataCorrelationID returns the correlation id error data carries, as
// correlateData left it (id() when it carries none that can be read): an
// error too large to send is sent again with only this id as its data.
func dataCorrelationID(data any, id func() string) string {
	switch d := data.(type) {
	case protoErrData:
		return d.CorrelationID
	case *StructuredError:
		if d != nil && d.CorrelationID != "" {
			return d.CorrelationID
		}
	case map[string]any:
		if c, ok := d[correlationMember].(string); ok && c != "" {
			return c
		}
	case json.RawMessage:
		return rawCorrelationID(d, id)
	case jsontext.Value:
		return rawCorrelationID(d, id)
	}
	return id()
}

// rawCorrelationID is dataCorrelationID of a raw JSON value.
func rawCorrelationID(raw []byte, id func() string) string {
	members, _ := rawObject(raw)
	var c string
	if v, ok := members[correlationMember]; ok && jsonv2.Unmarshal(v, &c) == nil && c != "" {
		return c
	}
	return id()
}
