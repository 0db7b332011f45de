package mcp

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// featureJob registers a request that runs user code (resources/read,
// prompts/get, completion/complete) as in flight — cancellable by
// notifications/cancelled, waited for by the shutdown drain — and returns
// the job that runs fn and answers. A cancelled request is not answered; a
// panic in fn becomes -32603 and the server lives on.
func (ss *Session) featureJob(m *jsonrpc.Message, r responder, fn func(ctx context.Context) (any, *Error)) func() {
	key := idKey(m.ID)
	ctx, cancel := context.WithCancel(ss.requestContext(ss.messageContext()))
	ctx, prog := ss.withProgress(ctx, m.Params) // ReportProgress works in fn (progress_helper.go)
	ss.mu.Lock()
	if _, dup := ss.cancels[key]; dup {
		ss.mu.Unlock()
		cancel()
		r.error(&Error{Code: CodeInvalidRequest, Message: "Invalid Request: id is already in use by an in-flight request"})
		return nil
	}
	ss.cancels[key] = cancel
	ss.mu.Unlock()
	ss.inflightWG.Add(1)
	return func() {
		defer ss.inflightWG.Done()
		var res any
		var e *Error
		func() {
			defer func() {
				if p := recover(); p != nil {
					ss.log.Error("mcp: request handler panicked", "method", m.Method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					res, e = nil, &Error{Code: CodeInternalError, Message: "Internal error: the handler panicked"}
				}
			}()
			res, e = fn(ctx)
		}()
		cancelled := ctx.Err() != nil
		cancel()
		ss.mu.Lock()
		delete(ss.cancels, key)
		ss.mu.Unlock()
		prog.finish() // no progress notification follows the response
		switch {
		case cancelled:
			ss.log.Debug("mcp: response suppressed (request cancelled)", "method", m.Method)
			if r.batch != nil {
				r.batch.skip()
			}
		case e != nil:
			r.error(e)
		default:
			r.result(res)
		}
	}
}
