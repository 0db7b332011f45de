// Package jsonrpc is keel's strict JSON-RPC 2.0 codec: it splits one framed
// message into its envelope members, classifies it (request, notification,
// response, batch) and reports malformed input as the JSON-RPC error the
// sender must receive. Decoding is case-sensitive, rejects duplicate member
// names and invalid UTF-8, and bounds nesting depth.
package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// JSON-RPC 2.0 and MCP error codes.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeNotInitialized   = -32002 // keel: state error before the handshake completes
	CodeResourceNotFound = -32002 // MCP: resources/read of an unknown uri
	CodeURLElicitation   = -32042
)

// DefaultMaxDepth bounds the nesting depth of any decoded message.
const DefaultMaxDepth = 64

// Null is the JSON literal null, used as the id of errors whose request id
// cannot be determined.
var Null = jsontext.Value("null")

// Kind says what a decoded message is.
type Kind uint8

// Message kinds.
const (
	KindRequest      Kind = iota + 1 // method + id
	KindNotification                 // method, no id
	KindResponse                     // result or error + id
)

// Message is one decoded JSON-RPC message. Raw members alias the input only
// where documented; Decode copies what it keeps.
type Message struct {
	Kind   Kind
	ID     jsontext.Value // raw id (a string or an integer); nil when absent
	Method string
	Params jsontext.Value // nil when absent
	Result jsontext.Value // responses
	Error  *WireError     // error responses
}

// WireError is the error member of a JSON-RPC response.
type WireError struct {
	Code    int64          `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitzero"`
}

// DecodeError is malformed input: the code and message to answer with, and
// the id to answer to (Null when the request id cannot be determined).
type DecodeError struct {
	Code    int64
	Message string
	ID      jsontext.Value
}

// Error implements error.
func (e *DecodeError) Error() string { return fmt.Sprintf("jsonrpc %d: %s", e.Code, e.Message) }

// member is the index of an envelope member in a wireMessage.
type member int

const (
	memberJSONRPC member = iota
	memberID
	memberMethod
	memberParams
	memberResult
	memberError
	memberCount
)

// envelopeNames are the names of the envelope members, by member.
var envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// wireMessage holds the envelope members of one message as slices of the
// decoded input (nil: absent).
type wireMessage [memberCount]jsontext.Value

// decoder is a pooled strict JSON decoder reading from a byte slice.
type decoder struct {
	src bytes.Buffer
	dec jsontext.Decoder
	gen int // the optionsGen of the options dec was last reset with
}

// decoderPool holds decoders ready for WithDecoder: each reset over its
// empty src with the codec's options, so that a use sets src and reads.
var decoderPool = sync.Pool{New: func() any {
	d := &decoder{gen: optionsGen}
	d.dec.Reset(&d.src, options)
	return d
}}

// ready makes d, reset over d.src, ready for a use: it resets it again
// if it was reset before a package registered its arshalers.
func (d *decoder) ready() {
	if d.gen != optionsGen {
		d.gen = optionsGen
		d.dec.Reset(&d.src, options)
	}
}

// scan reads one JSON object (data, trimmed, starting with '{') and records
// where its envelope members are. It validates the whole input strictly:
// syntax, UTF-8, duplicate member names at every depth, nothing after the
// object. Member names match exactly (case-sensitive, after unescaping).
func scan(data []byte, w *wireMessage) error {
	return WithDecoder(data, func(dec *jsontext.Decoder) error {
		if err := members(dec, data, envelopeNames, w[:], false); err != nil {
			return err
		}
		if _, err := dec.ReadToken(); err != io.EOF {
			if err == nil {
				err = errTrailingData
			}
			return err
		}
		return nil
	})
}

// WithDecoder calls read with a pooled strict decoder over data (the one
// every reading of a message's JSON in keel uses), with the codec's
// options. A bytes.Buffer is
// decoded in place (no copy): the values read are slices of data, and
// offsets index it.
func WithDecoder(data []byte, read func(dec *jsontext.Decoder) error) error {
	d := decoderPool.Get().(*decoder)
	d.ready()
	d.src = *bytes.NewBuffer(data)
	err := read(&d.dec)
	// One reset per use: it drops the reference to data, clears what
	// read left (even a value read halfway) and readies the decoder for
	// the next use, with the codec's options (the registered arshalers).
	d.src = bytes.Buffer{}
	d.gen = optionsGen
	d.dec.Reset(&d.src, options)
	decoderPool.Put(d)
	return err
}

var errTrailingData = errors.New("invalid data after top-level value")

var errNotObject = errors.New("not a JSON object")

var openBrace, openBracket = []byte{'{'}, []byte{'['}

var version = []byte(`"2.0"`)

// IsBatch reports whether data (one framed message) is a JSON array.
func IsBatch(data []byte) bool {
	data = trimSpace(data)
	return len(data) > 0 && data[0] == '['
}

// CheckDepth returns a parse error if data nests arrays or objects deeper than
// maxDepth (<= 0 means DefaultMaxDepth). It does not validate syntax; it
// skips string contents.
func CheckDepth(data []byte, maxDepth int) *DecodeError {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if bytes.Count(data, openBrace)+bytes.Count(data, openBracket) <= maxDepth {
		return nil // too few openings to nest deeper (a usual message: two vector counts)
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = stringEnd(data, i)
		case '[', '{':
			depth++
			if depth > maxDepth {
				return &DecodeError{Code: CodeParseError, ID: Null,
					Message: "Parse error: nesting depth exceeds MaxDepth (" + strconv.Itoa(maxDepth) + ")"}
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// stringEnd returns the index of the quote closing the string that opens at
// data[start], or len(data) if it is not closed.
func stringEnd(data []byte, start int) int {
	// Short strings (most member names and values) are scanned bytewise;
	// long ones with IndexByte.
	for j := start + 1; j < len(data) && j <= start+16; j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	for j := start + 1; ; j++ {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return len(data)
		}
		j += k
		// The quote is escaped if an odd number of backslashes precede it.
		n := 0
		for p := j - 1; p > start && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j
		}
	}
}

// SplitBatch splits a JSON array (already depth-checked) into its elements.
// An invalid array is a parse error; an empty one is an invalid request.
func SplitBatch(data []byte) ([]jsontext.Value, *DecodeError) {
	var elems []jsontext.Value
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, parseError(err)
	}
	if len(elems) == 0 {
		return nil, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: empty batch", ID: Null}
	}
	return elems, nil
}

// Decode decodes one JSON-RPC message (not a batch). data may be reused by
// the caller after Decode returns: everything kept is copied.
//
// Syntax is checked before meaning: any invalid JSON (including duplicate
// member names at any depth, invalid UTF-8, nesting deeper than maxDepth,
// data after the value) is a parse error with id null; valid JSON that is not
// a valid message is an invalid request, answered to the message's id when
// that id is well-formed. maxDepth <= 0 means DefaultMaxDepth.
func Decode(data []byte, maxDepth int) (Message, *DecodeError) {
	return decode(data, maxDepth, false)
}

// DecodeOwned is Decode of a message the caller hands over: data must not
// change afterwards, and the message's values are slices of it (nothing is
// copied). A server uses it for a request whose buffer is its own, as the
// body of an HTTP POST is.
func DecodeOwned(data []byte, maxDepth int) (Message, *DecodeError) {
	return decode(data, maxDepth, true)
}

func decode(data []byte, maxDepth int, owned bool) (Message, *DecodeError) {
	data = trimSpace(data)
	if derr := CheckDepth(data, maxDepth); derr != nil {
		return Message{}, derr
	}
	if len(data) == 0 || data[0] != '{' {
		if len(data) > 0 && jsontext.Value(data).IsValid() {
			return Message{}, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: not a JSON-RPC object", ID: Null}
		}
		return Message{}, &DecodeError{Code: CodeParseError, Message: "Parse error: invalid JSON", ID: Null}
	}
	var w wireMessage
	if err := scan(data, &w); err != nil {
		return Message{}, parseError(err)
	}
	id := w[memberID]
	jsonrpc := w[memberJSONRPC]
	method := w[memberMethod]
	params := w[memberParams]
	result := w[memberResult]
	errObj := w[memberError]

	// Copy what is kept (id, params, result) into one allocation.
	idOK := id == nil || validID(id)
	keep := len(params) + len(result)
	if idOK {
		keep += len(id)
	}
	var m Message
	var arena []byte
	if keep > 0 && !owned {
		arena = make([]byte, 0, keep)
	}
	if id != nil && idOK {
		arena, m.ID = keepValue(arena, id)
	}
	replyID := m.ID
	if replyID == nil {
		replyID = Null
	}
	isResponse := method == nil && (result != nil || errObj != nil)
	if !isVersion(jsonrpc) {
		if jsonrpc == nil {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: `Invalid Request: missing "jsonrpc"`, ID: replyID}
		}
		return m, &DecodeError{Code: CodeInvalidRequest, Message: `Invalid Request: "jsonrpc" must be "2.0"`, ID: replyID}
	}
	if !idOK && !(isResponse && errObj != nil && id.Kind() == 'n') {
		// An error response may carry id null: it answers a message whose
		// id could not be read.
		return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: id must be a string or an integer", ID: Null}
	}
	switch {
	case method != nil:
		name, ok := methodName(method)
		if !ok {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: method must be a string", ID: replyID}
		}
		m.Method = name
		if result != nil || errObj != nil {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: a request has no result or error", ID: replyID}
		}
		if params != nil {
			if k := params.Kind(); k != '{' && k != '[' {
				return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: params must be an object", ID: replyID}
			}
			arena, m.Params = keepValue(arena, params)
		}
		if m.ID == nil {
			m.Kind = KindNotification
		} else {
			m.Kind = KindRequest
		}
		return m, nil
	case isResponse:
		if result != nil && errObj != nil {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: both result and error", ID: replyID}
		}
		m.Kind = KindResponse
		if result != nil {
			_, m.Result = keepValue(arena, result)
		} else {
			m.Error = new(WireError)
			if err := json.Unmarshal(errObj, m.Error); err != nil || errObj.Kind() != '{' {
				m.Error = nil
				return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: malformed error object", ID: replyID}
			}
		}
		return m, nil
	default:
		return m, &DecodeError{Code: CodeInvalidRequest, Message: `Invalid Request: missing "method"`, ID: replyID}
	}
}

// keepValue appends v to arena (which has room for it) and returns the copy.
func keepValue(arena []byte, v []byte) ([]byte, jsontext.Value) {
	if arena == nil { // an owned message: v itself (capped: nothing appends to it)
		return nil, jsontext.Value(v[:len(v):len(v)])
	}
	n := len(arena)
	arena = append(arena, v...)
	return arena, jsontext.Value(arena[n:len(arena):len(arena)])
}

// isVersion reports whether raw is the JSON string "2.0".
func isVersion(raw jsontext.Value) bool {
	if bytes.Equal(raw, version) {
		return true
	}
	if raw.Kind() != '"' || bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var buf [16]byte
	u, err := jsontext.AppendUnquote(buf[:0], raw)
	return err == nil && string(u) == "2.0"
}

// methodName returns the string value of the raw method member; common
// method names are returned without allocating.
func methodName(raw jsontext.Value) (string, bool) {
	if raw.Kind() != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		u, err := jsontext.AppendUnquote(nil, raw)
		if err != nil {
			return "", false
		}
		s = u
	}
	return internMethod(s), true
}

// internMethod returns s as a string, without allocating for the method
// names of MCP (all revisions).
func internMethod(s []byte) string {
	switch string(s) {
	case "initialize":
		return "initialize"
	case "ping":
		return "ping"
	case "tools/list":
		return "tools/list"
	case "tools/call":
		return "tools/call"
	case "resources/list":
		return "resources/list"
	case "resources/templates/list":
		return "resources/templates/list"
	case "resources/read":
		return "resources/read"
	case "resources/subscribe":
		return "resources/subscribe"
	case "resources/unsubscribe":
		return "resources/unsubscribe"
	case "prompts/list":
		return "prompts/list"
	case "prompts/get":
		return "prompts/get"
	case "completion/complete":
		return "completion/complete"
	case "logging/setLevel":
		return "logging/setLevel"
	case "sampling/createMessage":
		return "sampling/createMessage"
	case "elicitation/create":
		return "elicitation/create"
	case "roots/list":
		return "roots/list"
	case "tasks/get":
		return "tasks/get"
	case "tasks/result":
		return "tasks/result"
	case "tasks/list":
		return "tasks/list"
	case "tasks/cancel":
		return "tasks/cancel"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/progress":
		return "notifications/progress"
	case "notifications/message":
		return "notifications/message"
	case "notifications/tools/list_changed":
		return "notifications/tools/list_changed"
	case "notifications/resources/list_changed":
		return "notifications/resources/list_changed"
	case "notifications/resources/updated":
		return "notifications/resources/updated"
	case "notifications/prompts/list_changed":
		return "notifications/prompts/list_changed"
	case "notifications/roots/list_changed":
		return "notifications/roots/list_changed"
	case "notifications/tasks/status":
		return "notifications/tasks/status"
	case "notifications/elicitation/complete":
		return "notifications/elicitation/complete"
	}
	return string(s)
}

// maxParseErrorMessage bounds the message of a parse error, which may quote
// member names of the input.
const maxParseErrorMessage = 256

func parseError(err error) *DecodeError {
	msg := "Parse error: invalid JSON"
	var se *jsontext.SyntacticError
	switch {
	case errors.As(err, &se) && se.Err != nil:
		msg = "Parse error: " + se.Err.Error()
		if se.JSONPointer != "" {
			msg += " at " + string(se.JSONPointer)
		}
	case err == errTrailingData:
		msg = "Parse error: " + err.Error()
	}
	// The message is sent back: keep it valid UTF-8 and short.
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if len(msg) > maxParseErrorMessage {
		cut := maxParseErrorMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return &DecodeError{Code: CodeParseError, Message: msg, ID: Null}
}

// validID reports whether raw is a JSON string or an integer (MCP forbids
// null and fractional ids).
func validID(raw jsontext.Value) bool {
	switch raw.Kind() {
	case '"':
		return true
	case '0':
		for _, c := range raw {
			if c == '.' || c == 'e' || c == 'E' {
				return false
			}
		}
		return true
	}
	return false
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// Members finds the top-level members of the JSON object data (a message's
// params, say) named in names: out[i] is set to the raw value of names[i],
// a slice of data (no copy), and left nil when absent. It reads data with
// a pooled decoder, strictly (duplicate names are an error); names match
// exactly, after unescaping. len(out) must be len(names).
func Members(data []byte, names []string, out []jsontext.Value) error {
	return WithDecoder(data, func(dec *jsontext.Decoder) error { return members(dec, data, names, out, false) })
}

// MembersOfValid is Members for data that was read strictly already (the
// params of a decoded message): it stops once every name is found, so the
// members after the last of them are not read again.
func MembersOfValid(data []byte, names []string, out []jsontext.Value) error {
	return WithDecoder(data, func(dec *jsontext.Decoder) error { return members(dec, data, names, out, true) })
}

// members reads the object at dec (data's decoder) for Members; with
// stopEarly, it returns once every name is found.
func members(dec *jsontext.Decoder, data []byte, names []string, out []jsontext.Value, stopEarly bool) error {
	switch tok, err := dec.ReadToken(); {
	case err != nil:
		return err
	case tok.Kind() != '{':
		return errNotObject
	}
	found := 0
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		i := nameIndex(name, names)
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if i >= 0 {
			end := int(dec.InputOffset())
			out[i] = data[end-len(val) : end]
			if found++; stopEarly && found == len(names) {
				return nil // valid data has no duplicate name
			}
		}
	}
	_, err := dec.ReadToken() // '}'
	return err
}

// nameIndex returns the index in names of the raw (quoted) member name, or
// -1.
func nameIndex(name jsontext.Value, names []string) int {
	if len(name) < 2 {
		return -1
	}
	s := name[1 : len(name)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		u, err := jsontext.AppendUnquote(nil, name)
		if err != nil {
			return -1
		}
		s = u
	}
	for i, n := range names {
		if string(s) == n {
			return i
		}
	}
	return -1
}
