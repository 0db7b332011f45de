// Package jsonrpc is keel's strict JSON-RPC 2.0 codec: it splits one framed
// message into its envelope members, classifies it (request, notification,
// response, batch) and reports malformed input as the JSON-RPC error the
// sender must receive. Decoding is case-sensitive, rejects duplicate member
// names and invalid UTF-8, and bounds nesting depth.
package jsonrpc

import (
	"bytes"
	"fmt"
	"strconv"

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
	CodeNotInitialized   = -32002 // keel/seed: state error before the handshake completes
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
	Data    jsontext.Value `json:"data,omitempty"`
}

// DecodeError is malformed input: the code and message to answer with, and
// the id to answer to (Null when the request id cannot be determined).
type DecodeError struct {
	Code    int64
	Message string
	ID      jsontext.Value
}

func (e *DecodeError) Error() string { return fmt.Sprintf("jsonrpc %d: %s", e.Code, e.Message) }

type wireMessage struct {
	JSONRPC jsontext.Value `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  jsontext.Value `json:"method"`
	Params  jsontext.Value `json:"params"`
	Result  jsontext.Value `json:"result"`
	Error   jsontext.Value `json:"error"`
}

var version = []byte(`"2.0"`)

// IsBatch reports whether data (one framed message) is a JSON array.
func IsBatch(data []byte) bool {
	data = trimSpace(data)
	return len(data) > 0 && data[0] == '['
}

// CheckDepth returns a parse error if data nests arrays or objects deeper than
// maxDepth. It does not validate syntax; it skips string contents.
func CheckDepth(data []byte, maxDepth int) *DecodeError {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data); i++ {
				if data[i] == '\\' {
					i++
				} else if data[i] == '"' {
					break
				}
			}
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
func Decode(data []byte, maxDepth int) (Message, *DecodeError) {
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
	if err := json.Unmarshal(data, &w); err != nil {
		return Message{}, parseError(err)
	}
	var m Message
	idOK := true
	if w.ID != nil {
		if !validID(w.ID) {
			idOK = false
		} else {
			m.ID = w.ID
		}
	}
	replyID := m.ID
	if replyID == nil {
		replyID = Null
	}
	if !bytes.Equal(w.JSONRPC, version) {
		if w.JSONRPC == nil {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: `Invalid Request: missing "jsonrpc"`, ID: replyID}
		}
		return m, &DecodeError{Code: CodeInvalidRequest, Message: `Invalid Request: "jsonrpc" must be "2.0"`, ID: replyID}
	}
	if !idOK {
		return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: id must be a string or an integer", ID: Null}
	}
	switch {
	case w.Method != nil:
		if w.Method.Kind() != '"' {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: method must be a string", ID: replyID}
		}
		if err := json.Unmarshal(w.Method, &m.Method); err != nil {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: method must be a string", ID: replyID}
		}
		if w.Result != nil || w.Error != nil {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: a request has no result or error", ID: replyID}
		}
		if w.Params != nil {
			if k := w.Params.Kind(); k != '{' && k != '[' {
				return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: params must be an object", ID: replyID}
			}
			m.Params = w.Params
		}
		if m.ID == nil {
			m.Kind = KindNotification
		} else {
			m.Kind = KindRequest
		}
		return m, nil
	case w.Result != nil || w.Error != nil:
		if m.ID == nil {
			// A response whose id could not be read (the peer's error reply
			// to our malformed message); keep it as an id-less response.
			m.ID = nil
		}
		if w.Result != nil && w.Error != nil {
			return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: both result and error", ID: replyID}
		}
		m.Kind = KindResponse
		m.Result = w.Result
		if w.Error != nil {
			m.Error = new(WireError)
			if err := json.Unmarshal(w.Error, m.Error); err != nil {
				return m, &DecodeError{Code: CodeInvalidRequest, Message: "Invalid Request: malformed error object", ID: replyID}
			}
		}
		return m, nil
	default:
		return m, &DecodeError{Code: CodeInvalidRequest, Message: `Invalid Request: missing "method"`, ID: replyID}
	}
}

func parseError(err error) *DecodeError {
	msg := "Parse error"
	if se, ok := err.(*jsontext.SyntacticError); ok && se.Err != nil {
		msg += ": " + se.Err.Error()
		if se.JSONPointer != "" {
			msg += " at " + string(se.JSONPointer)
		}
	} else if err != nil {
		msg += ": invalid JSON"
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
