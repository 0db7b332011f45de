package mcp

import (
	"context"
	"errors"
	"log/slog"
)

// maskedMessage is what a client is told of a handler's plain error while
// its text is masked (ServerOptions.ExposeErrorText unset).
const maskedMessage = "internal error (its details are in the server's log under the correlationId)"

// plainError is the one place where a handler's error that carries no
// code of its own (neither an *Error nor a *StructuredError) becomes what
// the client is told: an INTERNAL StructuredError, retryable as INTERNAL
// is (ErrorCode.Retryable), whose message is errorText's. The caller
// fills in the correlation ids.
func plainError(s *Server, log *slog.Logger, what string, err error) *StructuredError {
	return NewToolError(ErrInternal, errorText(s, log, slog.LevelError, what, err, maskedMessage, nil), nil)
}

// clientSentinels are keel's own errors about the client's side of the
// exchange (a capability it did not declare, a request its revision
// cannot carry, its connection gone): their own text holds nothing of the
// server's and is sent even while error text is masked.
var clientSentinels = []error{ErrCapabilityNotDeclared, ErrNoClientRequests, ErrClosed}

// errorText is the rule for the text a client is told of a plain error
// (one without a code of its own) from the server's side: err's whole
// text only with ServerOptions.ExposeErrorText (s nil: unset); else the
// own text of the first sentinel err wraps, of clientSentinels then
// known, never the text wrapped around it (fmt.Errorf("db %s: %w", dsn,
// ErrClosed) must not send the DSN), or the text of the *CapabilityError
// it wraps, keel's own; else masked. The text withheld may
// hold a secret (a DSN with its password, a file path, a query): it is
// logged in full to log, at level, what naming what failed.
func errorText(s *Server, log *slog.Logger, level slog.Level, what string, err error, masked string, known []error) string {
	if s != nil && s.opts.ExposeErrorText {
		return err.Error()
	}
	text := masked
	var ce *CapabilityError
	if errors.As(err, &ce) { // keel's own text, all of it about the client's side
		text = ce.Error()
	}
	for _, list := range [2][]error{clientSentinels, known} {
		for _, sentinel := range list {
			if text == masked && errors.Is(err, sentinel) {
				text = sentinel.Error()
			}
		}
	}
	if text != masked {
		level = min(level, slog.LevelInfo) // the client's side: nothing failed in the server
	}
	if text != err.Error() {
		log.Log(context.Background(), level, "mcp: "+what+" failed; the client is not told the error's text", "error", err, "told", text)
	}
	return text
}

// ClientErrorText returns what a client may be told of err, a plain
// error (neither an *Error nor a *StructuredError) that the caller
// answers with a code of its own choosing (an admission policy's refusal,
// an operation a tool does not support), by the rule the server applies
// to a handler's plain error: err's whole text only with
// ServerOptions.ExposeErrorText (of call's session's server); else the
// own text of the first sentinel err wraps, among keel's about the
// client's side (ErrClosed, ErrCapabilityNotDeclared (the text of its
// *CapabilityError), ErrNoClientRequests) and then known, never the text
// around it; else masked. What is withheld is logged in full, at level Info, with call's
// logger (slog.Default() without one), what naming what failed.
func ClientErrorText(call *ToolCall, what string, err error, masked string, known ...error) string {
	var s *Server
	log := slog.Default()
	if call != nil {
		if call.Session != nil {
			s = call.Session.server
		}
		if call.Logger != nil {
			log = call.Logger
		}
	}
	return errorText(s, log, slog.LevelInfo, what, err, masked, known)
}

// protocolError is plainError as a JSON-RPC -32603 error, for the methods
// other than tools/call: the StructuredError rides in data, with the
// connection's correlation id (an answer replaces it with the request's).
// An *Error passes as it is.
func protocolError(ss *Session, what string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	se := plainError(ss.server, ss.log, what, err)
	se.CorrelationID = ss.connID()
	msg := "Internal error"
	if se.Message != maskedMessage {
		msg += ": " + se.Message
	}
	return &Error{Code: CodeInternalError, Message: msg, Data: se}
}
