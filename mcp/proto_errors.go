package mcp

import (
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// JSON-RPC error codes used by MCP.
const (
	CodeParseError       = jsonrpc.CodeParseError       // -32700: invalid JSON
	CodeInvalidRequest   = jsonrpc.CodeInvalidRequest   // -32600: valid JSON, not a valid request
	CodeMethodNotFound   = jsonrpc.CodeMethodNotFound   // -32601: unknown method or undeclared capability
	CodeInvalidParams    = jsonrpc.CodeInvalidParams    // -32602: invalid method parameters
	CodeInternalError    = jsonrpc.CodeInternalError    // -32603: internal error
	CodeNotInitialized   = jsonrpc.CodeNotInitialized   // -32002: a method called before the handshake completed
	CodeResourceNotFound = jsonrpc.CodeResourceNotFound // -32002: resources/read of an unknown uri
	CodeURLElicitation   = jsonrpc.CodeURLElicitation   // -32042: a URL-mode elicitation is required
	// CodeServerBusy (-32000, implementation-defined) refuses a request
	// over one of the server's limits; data is a RESOURCE_EXHAUSTED
	// StructuredError naming the limit.
	CodeServerBusy = -32000
)

// Error is a JSON-RPC error: what a request failed with at the protocol
// level. Servers return it from handlers to answer with exactly this code;
// the Client returns it for error responses. Match it with errors.As.
type Error struct {
	Code    int64
	Message string
	// Data is the optional data member. On the server side it is encoded as
	// JSON; on the client side it holds the raw JSON received (a
	// json.RawMessage); StructuredError decodes the keel form.
	//
	// A server's every protocol error carries the correlation id of the
	// request it answers (the request's _meta.correlationId, else the
	// connection's) in data.correlationId. When a handler returns an
	// *Error, nil Data is sent as {"correlationId": id}; a
	// *StructuredError without a CorrelationID, a map[string]any or a raw
	// JSON object (json.RawMessage) without a "correlationId" member is
	// sent as a copy with the id added (the handler's value is not
	// changed); any other Data (a string, an array, a struct of the
	// handler's) is sent as it is. An error too large for the transport's
	// MaxMessageBytes is sent with its message clipped and
	// {"correlationId": id} as its data.
	Data any
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("mcp: JSON-RPC error %d: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &mcp.Error{Code: mcp.CodeInvalidParams}) matches any invalid
// params error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// StructuredError returns the StructuredError carried in Data, if any.
func (e *Error) StructuredError() (*StructuredError, bool) {
	switch d := e.Data.(type) {
	case *StructuredError:
		return d, true
	case StructuredError:
		return &d, true
	case json.RawMessage:
		return decodeStructuredError(d)
	case jsontext.Value:
		return decodeStructuredError(d)
	}
	return nil, false
}

// Unwrap exposes a StructuredError carried in Data, so errors.As finds it.
func (e *Error) Unwrap() error {
	if se, ok := e.StructuredError(); ok {
		return se
	}
	return nil
}

// ErrorCode is the application-level code of a StructuredError.
type ErrorCode string

// Application error codes. Each has a default Retryable flag (see
// ErrorCode.Retryable).
const (
	// ErrInvalidArgument: the arguments do not match the tool's input
	// schema (checked before the handler runs).
	ErrInvalidArgument ErrorCode = "INVALID_ARGUMENT"
	// ErrInvalidInput: the arguments match the input schema, but the tool
	// cannot accept them (a reference to something of the wrong kind, a
	// name that is taken, a value out of the tool's own bounds).
	ErrInvalidInput ErrorCode = "INVALID_INPUT"
	// ErrNotFound: the tool, or something the call refers to, does not
	// exist.
	ErrNotFound ErrorCode = "NOT_FOUND"
	// ErrTimeout: the call did not finish within its deadline.
	ErrTimeout ErrorCode = "TIMEOUT"
	// ErrResourceExhausted: a server limit was reached: concurrency slots,
	// tasks, or a size limit of the request or of its result.
	ErrResourceExhausted ErrorCode = "RESOURCE_EXHAUSTED"
	// ErrRateLimited: the caller made more calls than its rate limit
	// allows; details.retryAfterMs says when the next one may pass.
	ErrRateLimited ErrorCode = "RATE_LIMITED"
	// ErrInternal: the server or the tool failed (a panic, an error that
	// carries no code of its own).
	ErrInternal ErrorCode = "INTERNAL"
	// ErrUnauthorized: the caller did not prove who it is, or proved it
	// with a credential that is not accepted (a missing or wrong token).
	ErrUnauthorized ErrorCode = "UNAUTHORIZED"
	// ErrPermissionDenied: the operation is not permitted to this caller,
	// or not in the server's current state, whoever asks.
	ErrPermissionDenied ErrorCode = "PERMISSION_DENIED"
	// ErrNotImplemented: the tool or feature exists but is not available
	// in this server (not configured, or unsupported).
	ErrNotImplemented ErrorCode = "NOT_IMPLEMENTED"
	// ErrNotInitialized: a method other than initialize and ping arrived
	// before the handshake completed (a JSON-RPC -32002 error).
	ErrNotInitialized ErrorCode = "NOT_INITIALIZED"
)

// retryableCodes is the table behind ErrorCode.Retryable: the codes whose
// failures may go away when the same call is made again later.
var retryableCodes = map[ErrorCode]bool{
	ErrTimeout:           true,
	ErrInternal:          true,
	ErrRateLimited:       true,
	ErrResourceExhausted: true,
}

// Retryable reports whether a call that failed with code c may succeed
// if made again, unchanged, later: true for TIMEOUT, INTERNAL,
// RATE_LIMITED and RESOURCE_EXHAUSTED; false for every other code
// (INVALID_ARGUMENT, INVALID_INPUT, NOT_FOUND, UNAUTHORIZED,
// PERMISSION_DENIED, NOT_IMPLEMENTED, NOT_INITIALIZED, and codes keel does
// not know). It is the default of StructuredError.Retryable.
func (c ErrorCode) Retryable() bool { return retryableCodes[c] }

// StructuredError is keel's application error: the JSON carried in the text
// block of an isError tool result, and in error.data of state and
// unknown-tool errors. Tool handlers return it (or wrap it) to choose the
// code; any other error becomes INTERNAL.
type StructuredError struct {
	Code    ErrorCode      `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	// Retryable tells the client whether the same call may succeed if
	// made again later (after details.retryAfterMs, when present).
	// NewToolError sets it from the code (ErrorCode.Retryable); the
	// producer of an error clears it when it knows better, as a size
	// limit does for RESOURCE_EXHAUSTED: the same request would exceed it
	// again. It is sent only when true.
	Retryable     bool   `json:"retryable,omitzero"`
	CorrelationID string `json:"correlationId,omitempty"`
	RunID         string `json:"runId,omitempty"`
}

// Error implements error.
func (e *StructuredError) Error() string { return string(e.Code) + ": " + e.Message }

// Is reports whether target is a *StructuredError with the same code, so
// errors.Is(err, &mcp.StructuredError{Code: mcp.ErrTimeout}) matches.
func (e *StructuredError) Is(target error) bool {
	t, ok := target.(*StructuredError)
	return ok && t.Code == e.Code
}

// NewToolError returns a StructuredError with the given code, message and
// details, Retryable as the code's default (ErrorCode.Retryable).
func NewToolError(code ErrorCode, message string, details map[string]any) *StructuredError {
	return &StructuredError{Code: code, Message: message, Details: details, Retryable: code.Retryable()}
}

// ToolErrorResult wraps a StructuredError as an isError tool result whose one
// text block is the error's JSON.
func ToolErrorResult(se *StructuredError) *CallToolResult {
	b, err := jsonv2.Marshal(se, jsonv2.Deterministic(true))
	if err != nil { // details that cannot be encoded
		b, _ = jsonv2.Marshal(&StructuredError{Code: se.Code, Message: se.Message, Retryable: se.Retryable, CorrelationID: se.CorrelationID, RunID: se.RunID})
	}
	return &CallToolResult{Content: []Content{{Type: ContentText, Text: string(b)}}, IsError: true}
}

// invalidParams is the -32602 error for params that do not decode into their
// Go type. It describes the problem in JSON terms: the decoder's own message
// names Go types, and go-json-experiment/json deliberately varies its wording
// from process to process ("cannot" / "unable to").
func invalidParams(err error) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid params: " + jsonrpc.DescribeDecodeError(err)}
}

// decodeStructuredError decodes raw error data in the keel form.
func decodeStructuredError(raw []byte) (*StructuredError, bool) {
	var se StructuredError
	if jsonv2.Unmarshal(raw, &se) == nil && se.Code != "" {
		return &se, true
	}
	return nil, false
}
