package mcp

import (
	"context"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// engine holds the rules of one protocol era. handleRequest hands each
// request to its engine once, as net/http hands a connection to its HTTP/2
// engine once: the 2024/2025 revisions negotiated per connection
// (rev2025_engine.go) or revision 2026-07-28, served per request from its
// own _meta (rev2026_engine.go). Method handlers never ask which revision
// they serve: what differs between the eras — which methods exist and
// who may call them (the gate: dispatch, notification), how a result and
// an error are encoded (encode, errorCode), how a request that needs input
// is answered (inputRequired) — is the engine's. The revision a request
// is served at is its scope's (responder.version), not a question for the
// engine. Dropping an era one day means deleting its engine's files.
//
// The answer path (responder.answer, result, error) consults encode,
// errorCode and inputRequired; handlers never call the engine. What else
// differs by revision for a method is its column of the method table:
// the input rounds run around its handler (inputRule, withInputRounds)
// and tools/call's task rules (taskGate, taskRule).
type engine interface {
	// dispatch checks m under the era's rules (handshake and state gate;
	// _meta, revision) and starts its method's handler in this era.
	dispatch(ss *Session, m *jsonrpc.Message, r responder) job
	// notification is dispatch's gate for notification m: whether it is
	// served (false: it is ignored, and logged) and the scope it is
	// served in.
	notification(ss *Session, m *jsonrpc.Message) (r responder, ok bool)
	// encode returns the wire form of result v.
	encode(r *responder, v any) (any, error)
	// inputRequired answers a request whose handler needs input.
	inputRequired(r *responder, ir *InputRequiredError)
	// errorCode is the code an error of code c is answered with: one
	// error (ResourceNotFoundError's -32002) is -32602 in 2026-07-28.
	errorCode(c int64) int64
}

// inputRule is one revision's input rounds: it runs the handler of req
// (req.handle), a request whose row of the method table declares input
// rounds, for the input target t its row read (inputTarget), and returns
// what the rounds end with. withInputRounds is its one caller; each
// column of the method table has its own (legacyRounds, modernRounds). A
// 2026-07-28 request's inputResponses and requestState are checked first
// and handed to the handler as its Input (InputFromContext); an
// *InputRequiredError the handler returns is the request's outcome, which
// the engine answers input_required. A 2025 session's client is asked
// through server-to-client requests, and the handler runs again with the
// answers, as often as it asks (up to ServerOptions.MaxInputRounds).
type inputRule func(ctx context.Context, req *Request, t inputTarget) (any, error)

// taskGate applies the refusals of a revision's task rules to a
// tools/call before its input rounds (a tool that must run as a task, or
// cannot), and decides how the call runs: after it, call.Task is set
// exactly when the call runs on the task path (taskRule). Each column of
// the method table reads tools/call with its own (legacyTaskGate,
// modernTaskGate).
type taskGate func(ctx context.Context, req *Request, call *ToolCall) *Error

// taskRule runs a tools/call that its column's taskGate put on the task
// path, inside the input rounds (its Input is its context's), and returns
// its outcome: the task it became, or the call's answer. Each column of
// the method table serves tools/call with its own (legacyTaskRun,
// modernTaskRun).
type taskRule func(ctx context.Context, req *Request, call *ToolCall) (any, error)

// scope is which revision's rules a request (or notification) follows:
// one value per message, set when it is handed to its engine (reader.route
// for a request, handleNotification's gate for a notification) and owned
// by that engine from then on, as net/http hands a connection to its
// HTTP/2 engine once. It is the engine plus what the engine needs to serve
// the message: a 2025 request's is its session (sessionScope: the
// revision initialize negotiated), a 2026-07-28 request's its own _meta
// (*modernReq), set by the engine once the _meta is checked. No scope
// value allocates but a 2026-07-28 request's, which is its per-request
// state.
type scope interface {
	// engine returns the engine that serves the message.
	engine() engine
	// version returns the revision the message is served at.
	version() string
}

// sessionScope is the scope of a message served under its connection's
// rules (connectionEngine: the revisions negotiated by initialize), and of
// an answer made before any hand-off (a refused batch, a message that
// cannot be parsed): the revision is the session's, as negotiated when it
// is read (initialize sets it while its own request is served).
type sessionScope struct{ ss *Session }

func (s sessionScope) engine() engine  { return connectionEngine }
func (s sessionScope) version() string { return s.ss.negotiated() }

// unmarkedScope is the scope of a message handed to the 2026-07-28 engine
// before its _meta is checked (an error answer to a request whose _meta is
// not valid), or that names no revision on a connection serving only
// 2026-07-28 requests (such a notification): the revision's rules, with no
// request state.
type unmarkedScope struct{ ss *Session }

func (s unmarkedScope) engine() engine  { return modernEngine{} }
func (s unmarkedScope) version() string { return s.ss.negotiated() }

// engine returns the engine r's request was handed to.
func (r *responder) engine() engine { return r.sc.engine() }

// version returns the revision r's request is served at: its own for a
// 2026-07-28 request, else the one its session negotiated.
func (r *responder) version() string { return r.sc.version() }

// modern returns the state of r's request if it is of revision 2026-07-28
// with a checked _meta (rev2026_meta.go), else nil.
func (r *responder) modern() *modernReq {
	m, _ := r.sc.(*modernReq)
	return m
}
