package aacp

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Outcome is the ledger status of a request or message: COMPLETED,
// FAILED or UNKNOWN.
type Outcome string

// Outcomes.
const (
	// OutcomeCompleted: the request was processed (for a message: its
	// receipt was acknowledged).
	OutcomeCompleted Outcome = "COMPLETED"
	// OutcomeFailed: processing failed permanently (for a message: it could
	// not be delivered).
	OutcomeFailed Outcome = "FAILED"
	// OutcomeUnknown: not settled yet, or settled where this caller cannot
	// see it (a timeout, a partition). Requests in this state are pending:
	// recovery drives them on.
	OutcomeUnknown Outcome = "UNKNOWN"
)

// Final reports whether o is COMPLETED or FAILED.
func (o Outcome) Final() bool { return o == OutcomeCompleted || o == OutcomeFailed }

// Valid reports whether o is one of the three outcomes.
func (o Outcome) Valid() bool { return o.Final() || o == OutcomeUnknown }

// Completion says how a request's handler finished, timeouts and
// disconnects included. It refines the Outcome.
type Completion string

// Completions.
const (
	// CompletionSuccess: the handler returned a result in time (COMPLETED).
	CompletionSuccess Completion = "success"
	// CompletionToolError: the handler returned an error in time, and the
	// retry policy gave up on it (FAILED).
	CompletionToolError Completion = "tool_error"
	// CompletionTimeout: the handler gave up because its deadline passed
	// (FAILED).
	CompletionTimeout Completion = "timeout"
	// CompletionLateCompleted: the handler finished after the caller's
	// deadline; the caller was told UNKNOWN and the result is recorded for
	// recovery (COMPLETED, or FAILED when it finished with an error).
	CompletionLateCompleted Completion = "late_completed"
	// CompletionAborted: the caller disconnected (cancelled) and the handler
	// stopped because of it (FAILED).
	CompletionAborted Completion = "aborted"
	// CompletionDisconnectedCompleted: the caller disconnected but the
	// handler finished normally (COMPLETED).
	CompletionDisconnectedCompleted Completion = "disconnected_completed"
	// CompletionProtocolError: the message could not be processed at all
	// (undeliverable, unknown agent, malformed) (FAILED).
	CompletionProtocolError Completion = "protocol_error"
)

// Application error codes added by this package to those of mcp.
const (
	// CodeAborted: the caller disconnected and the handler was aborted.
	CodeAborted mcp.ErrorCode = "ABORTED"
	// CodeUnavailable: a transient failure; retried by DefaultShouldRetry.
	CodeUnavailable mcp.ErrorCode = "UNAVAILABLE"
	// CodeProtocol: the message could not be delivered or processed.
	CodeProtocol mcp.ErrorCode = "PROTOCOL_ERROR"
)

// Resolution is the final state of a request as the ledger records it: what
// MarkCompleted/MarkFailed store and what every durable completion signal
// carries.
type Resolution struct {
	// RequestID is the request resolved.
	RequestID string `json:"requestId"`
	// Outcome is COMPLETED or FAILED.
	Outcome Outcome `json:"outcome"`
	// Completion says how the handler finished.
	Completion Completion `json:"completion,omitempty"`
	// Result is the handler's result (COMPLETED requests).
	Result json.RawMessage `json:"result,omitzero"`
	// Error says why the request failed (FAILED requests).
	Error *mcp.StructuredError `json:"error,omitempty"`
	// CompletionRef refers to a completion record stored elsewhere (for
	// results too large to keep inline); empty when Result is inline.
	CompletionRef string `json:"completionRef,omitempty"`
	// CompletedAt is when the resolution was recorded.
	CompletedAt time.Time `json:"completedAt,omitzero"`
	// Attempts is how many times the handler ran.
	Attempts int `json:"attempts,omitzero"`
}

// Err returns the resolution as the error SendRequest returns: nil for
// COMPLETED, a *FailedError for FAILED.
func (r *Resolution) Err() error {
	if r.Outcome == OutcomeFailed {
		return &FailedError{RequestID: r.RequestID, Completion: r.Completion, Err: r.Error}
	}
	return nil
}

// ErrUnknownOutcome is matched by the *UnknownOutcomeError a caller gets
// when it stopped waiting before any durable completion signal arrived.
var ErrUnknownOutcome = errors.New("aacp: outcome unknown")

// UnknownOutcomeError is what SendRequest and Await return when the caller's
// context ended (timeout or disconnect) before the request was resolved.
// The request may still complete: Await with RequestID, or the ledger,
// tells later. It matches ErrUnknownOutcome and the context error.
type UnknownOutcomeError struct {
	// RequestID is the request whose outcome is unknown.
	RequestID string
	// Cause is why the caller stopped waiting (a context error).
	Cause error
}

// Error implements error.
func (e *UnknownOutcomeError) Error() string {
	msg := "aacp: outcome of request " + e.RequestID + " is unknown"
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns ErrUnknownOutcome and the cause.
func (e *UnknownOutcomeError) Unwrap() []error { return []error{ErrUnknownOutcome, e.Cause} }

// ErrFailed is matched by every *FailedError.
var ErrFailed = errors.New("aacp: request failed")

// FailedError is what SendRequest and Await return for a request whose
// ledger outcome is FAILED. errors.As finds the *mcp.StructuredError.
type FailedError struct {
	// RequestID is the request that failed.
	RequestID string
	// Completion says how it failed.
	Completion Completion
	// Err is the recorded error.
	Err *mcp.StructuredError
}

// Error implements error.
func (e *FailedError) Error() string {
	msg := "aacp: request " + e.RequestID + " failed (" + string(e.Completion) + ")"
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrFailed and the StructuredError.
func (e *FailedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrFailed}
	}
	return []error{ErrFailed, e.Err}
}

// MessageStatus is the status of one message: for a REQUEST or EVENT the
// outcome of its request, for a RESPONSE the outcome it carries.
type MessageStatus struct {
	MessageID     string
	RequestID     string
	Outcome       Outcome
	Completion    Completion
	Timestamp     time.Time
	Error         *mcp.StructuredError
	CompletionRef string
	// Delivered reports whether the target acknowledged the message.
	Delivered bool
}

// toStructured turns any handler error into a StructuredError: one found
// with errors.As as is, any other as INTERNAL with the error's text.
func toStructured(err error) *mcp.StructuredError {
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		return se
	}
	return &mcp.StructuredError{Code: mcp.ErrInternal, Message: err.Error()}
}

// Permanent marks err as not worth retrying: an execution that fails with
// it is FAILED at once, whatever the retry policy says. The error's
// StructuredError (if any) is kept.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
