package mcp

import (
	"context"
	"errors"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// featureJob registers a request that runs user code (resources/read,
// prompts/get, completion/complete, tasks/result) as in flight (see
// inflight) and returns the job that runs fn and answers. A cancelled
// request is not answered; a panic in fn becomes -32603 and the server
// lives on. fn may return an *InputRequiredError (input.go).
func (ss *Session) featureJob(m *jsonrpc.Message, r responder, fn func(ctx context.Context) (any, error)) func() {
	ctx, prog := ss.withProgress(r.context(ss.messageContext()), m.Params) // ReportProgress works in fn (progress_helper.go)
	f := ss.begin(m, r, ctx, nil)
	if f == nil {
		return nil
	}
	f.prog = prog
	return func() { f.run(fn) }
}

// answer sends the outcome of a request other than tools/call: an *Error
// as it is, an input-required answer (input.go), a panic as -32603.
func (r responder) answer(res any, err error) {
	var ir *InputRequiredError
	var e *Error
	var p *errPanic
	switch {
	case err == nil:
		r.result(res)
	case errors.As(err, &ir):
		r.inputRequired(ir)
	case errors.As(err, &e):
		r.error(e)
	case errors.As(err, &p):
		r.error(&Error{Code: CodeInternalError, Message: "Internal error: the handler panicked"})
	default:
		r.error(r.ss.featureError(err))
	}
}
