//go:build keel_omit2025

package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// Built with the tag keel_omit2025, the package has no 2025 rules (the
// rev2025_* files, rev2025_engine.go, rev2025_downgrade.go and rev2025_downgrade_features.go
// are left out): the server serves revision 2026-07-28 only. This file
// holds what the shared code needs in their place.
//
//   - A request that does not name its revision in _meta is refused by
//     the 2026-07-28 rules (-32602), and initialize is answered with
//     -32022 (Unsupported protocol version), whose data lists the one
//     supported revision and echoes the requested one; its message says
//     that 2026-07-28 is not negotiated by initialize (each request names
//     it in _meta), also when initialize asked for 2026-07-28.
//   - The 2025 methods (ping, logging/setLevel, resources/subscribe and
//     unsubscribe, the 2025-11-25 tasks/result and tasks/list) answer
//     -32601, the 2025 notifications (notifications/initialized,
//     notifications/roots/list_changed) are ignored, and a batch is
//     refused (-32600).
//   - Session's server-to-client requests (CreateMessage, Elicit,
//     ListRoots, Ping, NotifyElicitationComplete) send nothing and return
//     an error matching ErrNoClientRequests; a handler asks for input
//     with InputRequired.
//   - Nothing reaches a client outside a request: Session.Notify
//     returns ErrNoChannel, and Session.Log sends only about a request,
//     at or above its own logLevel (ServerOptions.LogLevel, the 2025
//     session's level, is not used); 2026-07-28 clients get
//     notifications through subscriptions/listen (Server.NotifyAll).
//   - server/discover and -32022 list Version20260728 alone, and
//     ServerOptions.KeepAlive is not used (no session to ping).

// sessionChannel: no connection reaches its client outside a request
// (there is no 2025 session): Session.Notify returns ErrNoChannel, and
// Session.Log (with LogHandler and ClientLogger) sends a message only
// about a request, at or above that request's own logLevel;
// ServerOptions.LogLevel is not used.
func sessionChannel(*Session) bool { return false }

// supportedVersions: no revision is negotiated by initialize.
var supportedVersions []string

// connectionEngine serves the requests that do not name their revision
// in _meta: by the 2026-07-28 rules, which refuse them, except initialize,
// refused with the revisions this server supports.
var connectionEngine engine = omitted2025Engine{}

// omitted2025Engine is connectionEngine without the 2025 rules: the
// 2026-07-28 engine, but for initialize. A notification that names no
// revision is served as on a connection of 2026-07-28 requests only (the
// 2025 ones are ignored).
type omitted2025Engine struct{ modernEngine }

func (omitted2025Engine) dispatch(ss *Session, m *jsonrpc.Message, r responder) job {
	if m.Method == methodInitialize {
		return refuseGate(ss, m, r, initializeRefused(m.Params))
	}
	r.sc = unmarkedScope{ss}
	return modernEngine{}.dispatch(ss, m, r)
}

// initializeRefused is the answer to initialize without the 2025 rules:
// -32022 naming the supported revisions and echoing the requested one
// (empty when params name none). Its message says what is wrong: a
// revision the server does not serve, or, asked for 2026-07-28, that
// 2026-07-28 is not negotiated by initialize but named in each request's
// _meta.
func initializeRefused(params jsontext.Value) *Error {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = jsonrpc.Unmarshal(params, &p) // malformed params: requested ""
	e := unsupportedVersionError(p.ProtocolVersion)
	perRequest := Version20260728 + " is not negotiated by initialize: send each request with " +
		quote(revision.MetaProtocolVersion) + " in its _meta"
	if p.ProtocolVersion == Version20260728 {
		e.Message = "Unsupported protocol version in initialize: " + perRequest
	} else {
		e.Message += "; this server serves " + Version20260728 + " only, and " + perRequest
	}
	return e
}

// The method table's 2025 column (methods.go) is empty, and so are the
// handlers of the 2025 notifications (session.go).
var (
	handleSetLevel, handleSubscribe, handleUnsubscribe                    MethodHandler
	handleTasksGet, handleTasksResult, handleTasksCancel, handleTasksList MethodHandler
	handleInitialized, handleRootsListChanged                             MethodHandler
)

// The 2025 column's tools/call and completion/complete are empty too
// (the rows of prompts/get, resources/read and the custom methods have
// one handler for both columns, which only the 2026-07-28 engine uses).
var (
	legacyToolsCall, legacyComplete MethodHandler
	legacyToolsCallInput            inputReader
)

// legacyTasks: there are no 2025-11-25 tasks.
func legacyTasks(MethodHandler) MethodHandler { return nil }

// progressMessage: revision 2026-07-28, the only one served, has
// progress messages.
func progressMessage(message, _ string) string { return message }

// shapeResult returns v fit for revision 2026-07-28, the only one served:
// tools without their execution member.
func shapeResult(v any, _ string) any {
	if x, ok := v.(*ListToolsResult); ok {
		if t := withoutExecution(x.Tools); !sameSlice(t, x.Tools) {
			c := *x
			c.Tools = t
			return &c
		}
	}
	return v
}

// rulesFor: every task is a 2026-07-28 task.
func rulesFor(string) taskRules { return taskRules2026{} }

// startStateless: a stateless HTTP request of a 2025 revision starts no
// session; its requests are refused by the 2026-07-28 rules.
func startStateless(*Session, string) {}

// noClientRequests is the error of every server-to-client request.
func noClientRequests(method string) error {
	return fmt.Errorf("mcp: %s not sent: %w", method, ErrNoClientRequests)
}

// CreateMessage sends nothing: this build serves no revision with
// server-to-client requests. The error matches ErrNoClientRequests.
func (ss *Session) CreateMessage(context.Context, *CreateMessageParams) (*CreateMessageResult, error) {
	return nil, noClientRequests(methodSamplingCreateMessage)
}

// Elicit sends nothing: this build serves no revision with
// server-to-client requests. The error matches ErrNoClientRequests.
func (ss *Session) Elicit(context.Context, *ElicitParams) (*ElicitResult, error) {
	return nil, noClientRequests(methodElicitationCreate)
}

// NotifyElicitationComplete sends nothing: this build serves no revision
// with it. The error matches ErrNoClientRequests.
func (ss *Session) NotifyElicitationComplete(context.Context, string) error {
	return noClientRequests(notificationElicitationComplete)
}

// ListRoots sends nothing: this build serves no revision with
// server-to-client requests. The error matches ErrNoClientRequests.
func (ss *Session) ListRoots(context.Context) ([]Root, error) {
	return nil, noClientRequests(methodRootsList)
}

// Ping sends nothing: this build serves no revision with
// server-to-client requests. The error matches ErrNoClientRequests.
func (ss *Session) Ping(context.Context) error { return noClientRequests(methodPing) }

// handleBatch refuses a batch: revision 2026-07-28 has none.
func (rd *reader) handleBatch([]byte) job {
	responder{ss: rd.ss, sc: sessionScope{rd.ss}, wctx: rd.messageContext()}.error(&Error{Code: CodeInvalidRequest, Message: revision.BatchRefusedPerRequest})
	return nil
}

// pingClient: there is no 2025 session to keep alive
// (ServerOptions.KeepAlive is not used).
func pingClient(*Session, context.Context, time.Duration, context.CancelCauseFunc) (wait func()) {
	return func() {}
}

// taskSessions: there are no 2025 sessions whose tasks have owners.
type taskSessions struct{}

// taskEntry2025: there are no 2025-11-25 tasks.
type taskEntry2025 struct{}

// sessionNotes and hubSubscriptions: no session is notified outside a
// request, and none subscribes with resources/subscribe.
type (
	sessionNotes     struct{}
	hubSubscriptions struct{}
)

func (*changeHub) markSessionsLocked(listKind)      {}
func (*changeHub) updateSessionsLocked(string)      {}
func (*changeHub) dropSubscriptionsLocked(*Session) {}

// notifySessions: no session is notified outside a request (2026-07-28
// clients get NotifyAll through their listen streams).
func (*Server) notifySessions(context.Context, string, any) error { return nil }

// sessionFeatures: no session has a level of its own (logging/setLevel)
// nor roots to follow.
type sessionFeatures struct{}

// sessionLogLevel: a request that is not of revision 2026-07-28 gets no
// log messages (ServerOptions.LogLevel, the 2025 session's level, is not
// used).
func sessionLogLevel(*Session) LoggingLevel { return "" }

// sessionLogEnabled: nothing reaches a client outside a request's own
// level.
func sessionLogEnabled(*Session, LoggingLevel) bool { return false }

// sessionHandshake: no session is initialized (there is no initialize to
// negotiate a revision, client info or capabilities).
type sessionHandshake struct{}

func (*sessionHandshake) revision() string         { return "" }
func (*sessionHandshake) info() Implementation     { return Implementation{} }
func (*sessionHandshake) caps() ClientCapabilities { return ClientCapabilities{} }

// batch: no batch is accepted, so no request is answered in one.
type batch struct{}

func (*batch) addError(*responder, jsontext.Value, *Error) {}
func (*batch) skip()                                       {}
func (*batch) add(jsontext.Value, []byte)                  {}
