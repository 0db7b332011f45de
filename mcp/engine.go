package mcp

import (
	"context"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"

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
// the input rounds run around its handler (inputRule) and tools/call's
// task rules (taskRule).
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

// inputRule runs call as the handler of a request that may need input from
// its client, under one revision's rules: the one owner of the input
// sequence of every method whose row declares input rounds (tools/call,
// prompts/get, resources/read and the custom methods named in
// ServerOptions.InputMethods), each column of the method table with its
// own (legacyRounds, modernRounds). A 2026-07-28 request's inputResponses
// and requestState (for target, with arguments args) are checked first and
// handed to the handler as its Input; an *InputRequiredError the handler
// returns is answered input_required. A 2025 session's client is asked
// through server-to-client requests, and call runs again with the
// answers.
type inputRule func(r *responder, ctx context.Context, method, target string, args jsontext.Value, responses map[string]json.RawMessage, state string, call func(ctx context.Context) (any, error)) (any, error)

// taskRule applies a revision's task rules to a tools/call: handled false
// means "serve it as a plain call". Each column of the method table serves
// tools/call with its own (legacyToolsCall, modernToolsCall).
type taskRule func(ctx context.Context, req *Request, call *ToolCall, p *CallToolParams) (res any, err error, handled bool)

// engine returns the engine r's request was handed to.
func (r *responder) engine() engine {
	if r.eng == nil {
		return connectionEngine
	}
	return r.eng
}

// version returns the revision r's request is served at: its own for a
// 2026-07-28 request (its scope, set when the engine took it), else the
// one its session negotiated.
func (r *responder) version() string {
	if r.mod != nil {
		return r.mod.meta.ProtocolVersion
	}
	return r.ss.negotiated()
}
