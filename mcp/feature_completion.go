package mcp

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"
)

// CompletionSource is what a Server answers completion/complete from:
// values for a prompt argument (ref/prompt) or a resource template variable
// (ref/resource). registry.Registry satisfies it. Setting
// ServerOptions.Completions declares the completions capability (2025-03-26
// and later; 2024-11-05 clients may call the method, which that revision
// has without a capability).
type CompletionSource interface {
	// Complete returns the completion of p.Argument. The Server sends at
	// most MaxCompletionValues values: it truncates longer lists and then
	// sets hasMore and total. An unknown prompt or template is an *Error
	// with code -32602 (or an INVALID_ARGUMENT or NOT_FOUND
	// *StructuredError); any other error becomes -32603. p.Context is nil
	// for clients of revisions before 2025-06-18. p is the request's
	// params as Params decoded them, shared with any middleware that
	// decoded them too: treat it as read-only.
	Complete(ctx context.Context, p *CompleteParams) (*CompleteResult, error)
}

// handleComplete serves completion/complete, with the params a
// middleware decoded (Params) or decoded here. withContext is the rule of
// the method table's column: false drops params.context, which a client
// of a revision without it cannot have meant (legacyComplete).
func handleComplete(ctx context.Context, req *Request, withContext bool) (any, error) {
	if req.Params == nil || jsontext.Value(req.Params).Kind() != '{' {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: completion/complete requires params {ref, argument}"}
	}
	p, err := Params[CompleteParams](req)
	if err != nil {
		return nil, err
	}
	if p.Ref.Type == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: ref is required"}
	}
	if p.Argument.Name == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: argument.name is required"}
	}
	if p.Context != nil && !withContext {
		c := *p // the decoded params are shared with middleware: read-only
		c.Context = nil
		p = &c
	}
	ss := req.Session
	res, err := ss.server.opts.Completions.Complete(req.withProgress(ctx), p)
	if err != nil {
		return nil, ss.featureError(err)
	}
	return capCompletion(res), nil
}

// capCompletion returns res fit for the wire: at most MaxCompletionValues
// values (a longer list is truncated, with total and hasMore set), values
// never null.
func capCompletion(res *CompleteResult) *CompleteResult {
	if res == nil {
		return &CompleteResult{Completion: Completion{Values: []string{}}}
	}
	c := res.Completion
	if len(c.Values) <= MaxCompletionValues && c.Values != nil {
		return res
	}
	out := *res
	if n := int64(len(c.Values)); n > MaxCompletionValues {
		if c.Total == nil || *c.Total < n {
			c.Total = &n
		}
		c.Values, c.HasMore = c.Values[:MaxCompletionValues:MaxCompletionValues], true
	}
	if c.Values == nil {
		c.Values = []string{}
	}
	out.Completion = c
	return &out
}
