package agents

import (
	"context"
	"errors"
	"fmt"

	"github.com/keelmcp/keel/mcp"
)

// Causes of coordinator errors. Every error the Coordinator itself returns is
// an *Error that matches one of these with errors.Is (and unwraps to a
// *mcp.StructuredError for errors.As); errors returned by handlers are
// returned unchanged.
var (
	// ErrAgentNotFound: no agent is registered under the id (NOT_FOUND,
	// reason AGENT_NOT_FOUND).
	ErrAgentNotFound = errors.New("agent not found")
	// ErrAgentExists: Register with an id that is taken (INVALID_ARGUMENT,
	// reason AGENT_ALREADY_REGISTERED).
	ErrAgentExists = errors.New("agent already registered")
	// ErrInvalidAgent: Register with an empty id or a nil handler
	// (INVALID_ARGUMENT, reason INVALID_AGENT).
	ErrInvalidAgent = errors.New("invalid agent registration")
	// ErrAgentDisabled: a message to a disabled agent (UNAUTHORIZED, reason
	// AGENT_PERMISSION_DENIED).
	ErrAgentDisabled = errors.New("agent is disabled")
	// ErrUnregistered: the agent was unregistered while the message waited
	// in its queue (NOT_FOUND, reason AGENT_UNREGISTERED).
	ErrUnregistered = errors.New("agent was unregistered")
	// ErrQueueFull: the agent's queue holds Options.QueueSize messages
	// already (RESOURCE_EXHAUSTED, reason AGENT_QUEUE_FULL).
	ErrQueueFull = errors.New("agent queue is full")
	// ErrStateTooLarge: the handler's state changes would make the agent's
	// state larger than Options.MaxStateBytes; they were discarded and the
	// previous state kept (RESOURCE_EXHAUSTED, reason STATE_TOO_LARGE).
	ErrStateTooLarge = errors.New("agent state exceeds maxStateBytes")
	// ErrShuttingDown: the coordinator is shutting down: Send and Register
	// are refused, and queued messages rejected by Shutdown fail with it
	// (INTERNAL, reason SHUTTING_DOWN).
	ErrShuttingDown = errors.New("agent coordinator is shutting down")
	// ErrHandlerPanic: the handler panicked; the agent lives on (INTERNAL,
	// reason AGENT_HANDLER_PANIC).
	ErrHandlerPanic = errors.New("agent handler panicked")
	// ErrDelegationCycle: a handler sent a message to an agent whose handler
	// is waiting for it (itself, or an agent up its delegation chain), which
	// could never be processed (INVALID_ARGUMENT, reason
	// AGENT_DELEGATION_CYCLE).
	ErrDelegationCycle = errors.New("agent delegation cycle")
	// ErrDelegationDepth: the delegation chain is Options.MaxDelegationDepth
	// agents deep already (RESOURCE_EXHAUSTED, reason
	// AGENT_DELEGATION_DEPTH_EXCEEDED).
	ErrDelegationDepth = errors.New("agent delegation depth exceeded")
	// ErrStateClosed: a State used after its handler returned.
	ErrStateClosed = errors.New("agents: state used after its handler returned")

	// ErrNotDelivered is matched (in addition to the specific cause) by
	// every error of a message that its handler never received: unknown,
	// disabled or unregistered agent, full queue, shutdown, delegation
	// limits, and a caller context that ended while the message was still
	// queued. Such a message can be sent again without running twice. Any
	// other error of Send means the handler ran, or — for a bare context
	// error — may have run.
	ErrNotDelivered = errors.New("message not delivered")
)

// Reasons carried in Details["reason"] of the StructuredErrors of this
// package; the AGENT_* names are the error codes of the agent tools
// (agent_list, agent_get, agent_run).
const (
	ReasonAgentNotFound         = "AGENT_NOT_FOUND"                 // ErrAgentNotFound
	ReasonAgentExists           = "AGENT_ALREADY_REGISTERED"        // ErrAgentExists
	ReasonInvalidAgent          = "INVALID_AGENT"                   // ErrInvalidAgent
	ReasonPermissionDenied      = "AGENT_PERMISSION_DENIED"         // ErrAgentDisabled
	ReasonUnregistered          = "AGENT_UNREGISTERED"              // ErrUnregistered
	ReasonQueueFull             = "AGENT_QUEUE_FULL"                // ErrQueueFull
	ReasonStateTooLarge         = "STATE_TOO_LARGE"                 // ErrStateTooLarge
	ReasonShuttingDown          = "SHUTTING_DOWN"                   // ErrShuttingDown
	ReasonHandlerPanic          = "AGENT_HANDLER_PANIC"             // ErrHandlerPanic
	ReasonDelegationCycle       = "AGENT_DELEGATION_CYCLE"          // ErrDelegationCycle
	ReasonDelegationDepth       = "AGENT_DELEGATION_DEPTH_EXCEEDED" // ErrDelegationDepth
	ReasonCancelled             = "CANCELLED"                       // the caller's context ended (or its deadline passed)
	ReasonStageFailed           = "AGENT_STAGE_FAILED"              // tools: a handler failed with a plain error
	ReasonInvalidMessage        = "INVALID_MESSAGE"                 // agentProxy: a malformed message argument
	ReasonResultNotSerializable = "result_not_serializable"         // agentProxy: a response that is not JSON-encodable
)

// Keys of the Details of this package's StructuredErrors.
const (
	reasonKey             = "reason"
	agentIDKey            = "agentId"
	limitKey              = "limit"
	maxStateBytesKey      = "maxStateBytes"
	stateBytesKey         = "stateBytes"
	queueSizeKey          = "queueSize"
	maxDelegationDepthKey = "maxDelegationDepth"
	delegationChainKey    = "delegationChain"
)

// Error is an error of the Coordinator. It names the agent, matches its cause
// (one of the Err* variables, or a context error) with errors.Is, and unwraps
// to a *mcp.StructuredError with the code and Details["reason"], so a tool
// handler can return it as is.
type Error struct {
	// AgentID is the agent the operation was about.
	AgentID string
	// Err is the cause.
	Err error

	se           *mcp.StructuredError
	notDelivered bool
}

// Error implements error.
func (e *Error) Error() string { return "agents: " + e.se.Message }

// Unwrap returns the cause, the StructuredError and, for messages the
// handler never received, ErrNotDelivered.
func (e *Error) Unwrap() []error {
	if e.notDelivered {
		return []error{e.Err, e.se, ErrNotDelivered}
	}
	return []error{e.Err, e.se}
}

// StructuredError returns the error as a StructuredError: code, message and
// Details with "reason", "agentId" and the limits involved. It is shared: do
// not modify it.
func (e *Error) StructuredError() *mcp.StructuredError { return e.se }

// newError builds an *Error; details may be nil and is owned by the error.
func newError(agentID string, cause error, code mcp.ErrorCode, reason string, details map[string]any, format string, args ...any) *Error {
	if details == nil {
		details = make(map[string]any, 2)
	}
	details[reasonKey] = reason
	if agentID != "" {
		details[agentIDKey] = agentID
	}
	return &Error{
		AgentID: agentID,
		Err:     cause,
		se:      &mcp.StructuredError{Code: code, Message: fmt.Sprintf(format, args...), Details: details},
	}
}

// undelivered marks e as an error of a message the handler never received.
func (e *Error) undelivered() *Error {
	e.notDelivered = true
	return e
}

func errNotFound(id string) *Error {
	return newError(id, ErrAgentNotFound, mcp.ErrNotFound, ReasonAgentNotFound, nil,
		"agent %q is not registered", id).undelivered()
}

func errDisabled(id string) *Error {
	return newError(id, ErrAgentDisabled, mcp.ErrUnauthorized, ReasonPermissionDenied, nil,
		"agent %q is disabled", id).undelivered()
}

func errUnregistered(id string) *Error {
	return newError(id, ErrUnregistered, mcp.ErrNotFound, ReasonUnregistered, nil,
		"agent %q was unregistered before the message was processed", id).undelivered()
}

func errShuttingDown(id string) *Error {
	return newError(id, ErrShuttingDown, mcp.ErrInternal, ReasonShuttingDown, nil,
		"the agent coordinator is shutting down; message to agent %q not processed", id).undelivered()
}

func errQueueFull(id string, size int) *Error {
	return newError(id, ErrQueueFull, mcp.ErrResourceExhausted, ReasonQueueFull,
		map[string]any{limitKey: queueSizeKey, queueSizeKey: size},
		"the queue of agent %q is full (queueSize %d)", id, size).undelivered()
}

func errStateTooLarge(id string, size, limit int) *Error {
	return newError(id, ErrStateTooLarge, mcp.ErrResourceExhausted, ReasonStateTooLarge,
		map[string]any{limitKey: maxStateBytesKey, maxStateBytesKey: limit, stateBytesKey: size},
		"state of agent %q would be %d bytes, over maxStateBytes (%d); its changes were discarded and the previous state kept", id, size, limit)
}

func errCancelled(id string, err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return newError(id, err, mcp.ErrTimeout, ReasonCancelled, nil,
			"message to agent %q not processed: the caller's deadline passed while it was queued", id).undelivered()
	}
	return newError(id, err, mcp.ErrInternal, ReasonCancelled, nil,
		"message to agent %q not processed: the caller's context ended while it was queued", id).undelivered()
}
