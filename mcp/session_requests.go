package mcp

import (
	"errors"
	"fmt"
)

// Requests the server sends the client, typically from inside a handler
// (find the session with SessionFromContext): sampling, elicitation and
// roots. Each is sent only when the client declared the capability and the
// negotiated revision has the feature; otherwise the call returns a
// *CapabilityError and nothing is sent. Each waits at most
// ServerOptions.RequestTimeout (and never past its ctx); when it gives up it
// sends notifications/cancelled for the request.
//
// A handler blocked on such a call does not hold up the connection: the
// response is read by the session's reader, which a tools/call running on
// it hands over to a new goroutine as soon as the call waits for the client.

// ErrCapabilityNotDeclared is matched (errors.Is) by every *CapabilityError.
var ErrCapabilityNotDeclared = errors.New("mcp: capability not declared by the client")

// CapabilityError reports a request the server did not send because the
// client did not declare the capability it needs, or because the
// negotiated protocol revision lacks the feature.
type CapabilityError struct {
	// Method is what was not sent (e.g. "sampling/createMessage").
	Method string
	// Capability is the client capability needed, as a dotted path into
	// ClientCapabilities (e.g. "sampling", "sampling.tools", "elicitation.url").
	Capability string
	// Revision is the negotiated protocol revision; MinRevision, when set,
	// is the first revision with the feature (it is newer than Revision).
	Revision    string
	MinRevision string
}

// Error describes what was missing.
func (e *CapabilityError) Error() string {
	if e.MinRevision != "" {
		return fmt.Sprintf("mcp: %s not sent: %s requires protocol revision %s or later (negotiated: %s)", e.Method, e.Capability, e.MinRevision, e.Revision)
	}
	return fmt.Sprintf("mcp: %s not sent: the client did not declare the %s capability", e.Method, e.Capability)
}

// Unwrap returns ErrCapabilityNotDeclared.
func (e *CapabilityError) Unwrap() error { return ErrCapabilityNotDeclared }
