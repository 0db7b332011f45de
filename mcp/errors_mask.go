package mcp

import (
	"errors"
	"log/slog"
)

// maskedMessage is what a client is told of a handler's plain error while
// its text is masked (ServerOptions.ExposeErrorText unset).
const maskedMessage = "internal error (its details are in the server's log under the correlationId)"

// plainError is the one place where a handler's error that carries no
// code of its own (neither an *Error nor a *StructuredError) becomes what
// the client is told: an INTERNAL StructuredError, retryable as INTERNAL
// is (ErrorCode.Retryable). Its text is logged to log, at error level, and
// reaches the client only with ServerOptions.ExposeErrorText: it may hold
// a secret (a DSN with its password, a file path, a query). The caller
// fills in the correlation ids. keel's own errors about the client's
// side (ownText) are not masked.
func plainError(s *Server, log *slog.Logger, what string, err error) *StructuredError {
	if s.opts.ExposeErrorText || ownText(err) {
		return NewToolError(ErrInternal, err.Error(), nil)
	}
	log.Error("mcp: "+what+" failed; the client is told INTERNAL without the error's text", "error", err)
	return NewToolError(ErrInternal, maskedMessage, nil)
}

// ownText reports whether err's text is keel's own, about the client's
// side of the exchange (a capability it did not declare, a request its
// revision cannot carry, its connection gone), and holds nothing of the
// server's: it is sent as it is.
func ownText(err error) bool {
	return errors.Is(err, ErrCapabilityNotDeclared) || errors.Is(err, ErrNoClientRequests) || errors.Is(err, ErrClosed)
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
