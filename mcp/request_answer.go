package mcp

import (
	"context"
	"errors"
	"github.com/go-json-experiment/json/jsontext"
)

// withProgress returns ctx carrying the Progress of a request other than
// tools/call (whose ToolCall holds its own): ReportProgress works in the
// handler, and the request finishes it before it answers. A handler run
// again (in input rounds) reports on the same Progress.
func (req *Request) withProgress(ctx context.Context) context.Context {
	if req.f.prog != nil {
		return context.WithValue(ctx, progressKey{}, req.f.prog)
	}
	ctx, req.f.prog = req.Session.withProgress(ctx, jsontext.Value(req.Params), req.ProtocolVersion())
	return ctx
}

// answer sends the outcome of a request: a result (shaped for the
// request's revision), an *Error as it is, an input-required answer
// (proto_input.go), a panic as -32603 (as an INTERNAL tool error for
// tools/call), anything else as the feature error it maps to.
func (r *responder) answer(res any, err error) {
	if err == nil {
		r.result(res)
		return
	}
	r.answerError(err)
}

// answerError answers with a handler's error (apart from answer, so that
// the variables errors.As needs are not allocated for every result).
func (r *responder) answerError(err error) {
	var ir *InputRequiredError
	var e *Error
	var p *errPanic
	switch {
	case errors.As(err, &ir):
		r.engine().inputRequired(r, ir)
	case errors.As(err, &e):
		r.error(e)
	case errors.As(err, &p) && r.call != nil:
		r.answer(r.toolResponse(r.call, nil, err))
	case errors.As(err, &p):
		r.error(&Error{Code: CodeInternalError, Message: "Internal error: the handler panicked"})
	default:
		r.error(r.ss.featureError(err))
	}
}
