package mcp

import (
	"context"

	"github.com/go-json-experiment/json"
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
	// for clients of revisions before 2025-06-18.
	Complete(ctx context.Context, p *CompleteParams) (*CompleteResult, error)
}

func handleComplete(ctx context.Context, req *Request) (any, error) {
	if req.Params == nil || jsontext.Value(req.Params).Kind() != '{' {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: completion/complete requires params {ref, argument}"}
	}
	p := new(CompleteParams)
	if err := json.Unmarshal(req.Params, p); err != nil {
		return nil, invalidParams(err)
	}
	if p.Ref.Type == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: ref is required"}
	}
	if p.Argument.Name == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: argument.name is required"}
	}
	p.Context = completionContext(p.Context, req.r.version())
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
