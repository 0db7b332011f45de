//go:build !keel_omit2025

package mcp

import (
	"context"
	"errors"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/internal/revision"
)

// legacyEngine serves the revisions negotiated per connection (2024-11-05
// to 2025-11-25): the initialize handshake and the state gate, results
// downgraded to the negotiated revision, and the server-to-client bridge
// (a handler's need for input is met by asking the client). Batches
// (2025-03-26), logging/setLevel, resources/subscribe and the 2025-11-25
// tasks are its methods too (see the legacy column of the method table).
type legacyEngine struct{}

// connectionEngine serves the requests that do not name their revision in
// _meta: by the rules of the revision their connection negotiated.
var connectionEngine engine = legacyEngine{}

// sessionChannel reports whether the connection ss may reach its client
// outside a request (Session.Notify, Session.Log at the session's level):
// with the 2025 rules, only a 2025 session that has been initialized
// (RUNNING). A connection serving 2026-07-28 requests without initialize
// has none: its client is reached through its listen streams, which
// carry only what it subscribed to.
func sessionChannel(ss *Session) bool { return !ss.modernOnly && ss.currentState() == stateRunning }

func (legacyEngine) dispatch(ss *Session, m *jsonrpc.Message, r responder) job {
	switch m.Method {
	case methodInitialize:
		return ss.serveMethod(m, r, &initializeMethod, handleInitialize, inputRounds{})
	case methodPing:
		return ss.serveMethod(m, r, &pingMethod, handlePing, inputRounds{})
	}
	if st := ss.currentState(); st != stateRunning {
		return refuseGate(ss, m, r, &Error{Code: CodeNotInitialized, Message: "Not initialized",
			Data: &StructuredError{Code: ErrNotInitialized,
				Message:       "method " + quote(m.Method) + " received in state " + st.String() + "; send initialize and notifications/initialized first",
				CorrelationID: ss.connID()}})
	}
	md, ok := ss.server.lookupMethod(m.Method)
	if !ok || md.legacy == nil || (md.offered != nil && !md.offered(ss)) {
		return refuseGate(ss, m, r, methodNotFound(m.Method))
	}
	return ss.serveMethod(m, r, &md, md.legacy, inputRounds{read: md.legacyInput, rule: legacyRounds})
}

// notification: the built-in notifications are served in every state, a
// custom one (ServerOptions.Notifications) only once the session is
// initialized.
func (legacyEngine) notification(ss *Session, m *jsonrpc.Message) (responder, bool) {
	switch m.Method {
	case notificationInitialized, notificationCancelled, notificationRootsListChanged:
	default:
		if ss.currentState() != stateRunning {
			ss.log.Debug("mcp: notification before the session is initialized ignored", logclip.Attr("method", m.Method))
			return responder{}, false
		}
	}
	return responder{ss: ss, sc: sessionScope{ss}}, true
}

// initialize and ping are served in every state, before the state gate.
var (
	initializeMethod = method{legacy: handleInitialize, inline: true}
	pingMethod       = method{legacy: handlePing, inline: true}
)

func handlePing(context.Context, *Request) (any, error) { return emptyResult{}, nil }

func handleInitialize(_ context.Context, req *Request) (any, error) {
	var p initializeParams
	if req.Params == nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: initialize requires params"}
	}
	if err := jsonv2.Unmarshal(req.Params, &p); err != nil {
		return nil, invalidParams(err)
	}
	if p.ProtocolVersion == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: protocolVersion is required"}
	}
	ss := req.Session
	if !ss.state.CompareAndSwap(int32(stateStarting), int32(stateInitializing)) {
		return nil, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: initialize was already received on this connection"}
	}
	v := p.ProtocolVersion
	if !revision.Negotiated(v) {
		v = latestVersion
	}
	ss.mu.Lock()
	state2025(ss).hs = sessionHandshake{version: v, clientInfo: p.ClientInfo, clientCaps: p.Capabilities}
	ss.mu.Unlock()
	ss.log.Info("mcp: initialize", logclip.Attr("requested", p.ProtocolVersion), "negotiated", v, logclip.Attr("client", p.ClientInfo.Name))
	return ss.server.initializeResult(v), nil
}

func (legacyEngine) encode(r *responder, v any) (any, error) {
	return shapeResult(v, r.ss.negotiated()), nil
}

// legacyRounds is the inputRule of the legacy column: a legacy request
// carries no input of its own; when the handler needs some, the server
// asks the client, and runs the handler again with the answers.
func legacyRounds(ctx context.Context, req *Request, _ inputTarget) (any, error) {
	res, err := req.handle(ctx, req)
	if err == nil {
		return res, nil
	}
	return req.r.bridgeIfInput(ctx, req, res, err)
}

// bridgeIfInput asks the client for the input err asks for, if it is an
// *InputRequiredError, and runs req's handler again (apart from
// legacyRounds, so that the variable errors.As needs is not allocated for
// every result).
func (r *responder) bridgeIfInput(ctx context.Context, req *Request, res any, err error) (any, error) {
	var ir *InputRequiredError
	if !errors.As(err, &ir) {
		return res, err
	}
	return r.bridge(ctx, req, ir)
}

func (legacyEngine) inputRequired(r *responder, _ *InputRequiredError) {
	r.error(&Error{Code: CodeInternalError, Message: "Internal error: the handler needs input from the client, which this request cannot ask for"})
}

func (legacyEngine) errorCode(c int64) int64 { return c }

// legacyToolsCall is tools/call in the legacy column of the method table:
// under the 2025-11-25 task rules (legacyTaskRun); legacyToolsCallInput
// reads it, with its _meta (no metaRule) and the task gate of those rules
// (legacyTaskGate).
func legacyToolsCall(ctx context.Context, req *Request) (any, error) {
	return handleToolsCall(ctx, req, legacyTaskRun)
}

func legacyToolsCallInput(ctx context.Context, req *Request) (inputTarget, error) {
	return readToolCall(ctx, req, nil, legacyTaskGate)
}

// legacyComplete is completion/complete in the legacy column: params.context
// reaches the source from clients of 2025-06-18 and later only (an older
// client cannot have meant one).
func legacyComplete(ctx context.Context, req *Request) (any, error) {
	return handleComplete(ctx, req, completionContextIn(req.ProtocolVersion()))
}

// legacyTaskGate applies the 2025-11-25 task rules to a tools/call: the
// task host decides, by the session's revision, whether the call runs as
// a task (task_server.go) when its params ask for one (params.task) or
// the server has tasks.
func legacyTaskGate(ctx context.Context, req *Request, call *ToolCall) *Error {
	if call.Task == nil && req.Session.server.tasks == nil {
		return nil
	}
	return req.Session.server.tasks.taskGate(req.Session, ctx, call) // rev2025_tasks.go
}

// legacyTaskRun starts the task of a tools/call legacyTaskGate put on the
// task path.
func legacyTaskRun(ctx context.Context, req *Request, call *ToolCall) (any, error) {
	return req.Session.server.tasks.startTask(req.Session, ctx, req, call) // rev2025_tasks.go
}
