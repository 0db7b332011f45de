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
// (engine_legacy.go) or revision 2026-07-28, served per request from its
// own _meta (engine_modern.go). Method handlers never ask which revision
// they serve: what differs between the eras — which methods exist, how a
// result is shaped, how a handler's need for input is met — is the
// engine's. Dropping an era one day means deleting its engine's files.
type engine interface {
	// dispatch checks m under the era's rules (handshake and state gate;
	// _meta, revision) and starts its method's handler in this era.
	dispatch(ss *Session, m *jsonrpc.Message, r responder) job
	// version is the revision the request is served at.
	version(r *responder) string
	// encode returns the wire form of result v.
	encode(r *responder, v any) (any, error)
	// input returns the Input a request's own params carry for target
	// (2026-07-28: verified against its sealed requestState), or nil.
	input(r *responder, ctx context.Context, method, target string, args jsontext.Value, responses map[string]json.RawMessage, state string) (*Input, *Error)
	// complete runs call with in; when the handler asks for input, the
	// legacy engine asks the client and runs it again, the modern engine
	// returns the *InputRequiredError for its answer.
	complete(r *responder, ctx context.Context, in *Input, call func(ctx context.Context) (any, error)) (any, error)
	// inputRequired answers a request whose handler needs input.
	inputRequired(r *responder, ir *InputRequiredError)
	// resourceNotFound is the error of a resources/read of an unknown
	// resource (rpc: the source's own error, or nil).
	resourceNotFound(uri string, rpc *Error) *Error
	// taskCall applies the era's task rules to a tools/call: handled
	// false means "serve it as a plain call".
	taskCall(ctx context.Context, req *Request, call *ToolCall, p *CallToolParams) (res any, err error, handled bool)
}

// engine returns the engine r's request was handed to.
func (r *responder) engine() engine {
	if r.eng == nil {
		return connectionEngine
	}
	return r.eng
}

// version returns the revision r's request is served at.
func (r *responder) version() string { return r.engine().version(r) }
