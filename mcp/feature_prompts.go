package mcp

import (
	"context"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// PromptSource is what a Server serves prompts from (prompts/list,
// prompts/get). registry.Registry satisfies it. A source that also
// implements PromptChangeNotifier gets notifications/prompts/list_changed.
type PromptSource interface {
	// ListPrompts returns every prompt, sorted by name (byte order). The
	// Server paginates the slice and never modifies it.
	ListPrompts(ctx context.Context) ([]*Prompt, error)
	// GetPrompt renders one prompt. An unknown prompt or a missing
	// required argument is an *Error with code -32602 (or an
	// INVALID_ARGUMENT or NOT_FOUND *StructuredError, which the Server
	// turns into one); any other error becomes -32603. p is the request's
	// params as Params decoded them, shared with any middleware that
	// decoded them too: treat it as read-only.
	GetPrompt(ctx context.Context, p *GetPromptParams) (*GetPromptResult, error)
}

func handlePromptsList(ctx context.Context, req *Request) (any, error) {
	p, perr := decodePaginated(req)
	if perr != nil {
		return nil, perr
	}
	ss := req.Session
	list, err := ss.server.opts.Prompts.ListPrompts(ctx)
	if err != nil {
		return nil, ss.featureError(err)
	}
	page, next, perr := paginate(list, func(x *Prompt) string { return x.Name }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &ListPromptsResult{Prompts: page, NextCursor: next}, nil
}

// handlePromptsGet serves prompts/get, in the input rounds of its column
// of the method table.
func handlePromptsGet(ctx context.Context, req *Request, rounds inputRule) (any, error) {
	if req.Params == nil || jsontext.Value(req.Params).Kind() != '{' {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: prompts/get requires params {name, arguments}"}
	}
	p, err := Params[GetPromptParams](req) // a middleware's decoding, if one did
	if err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: name is required"}
	}
	ss, r := req.Session, &req.r
	src := ss.server.opts.Prompts
	args, err := json.Marshal(p.Arguments, json.Deterministic(true))
	if err != nil {
		return nil, invalidParams(err)
	}
	responses, state := p.InputResponses, p.RequestState
	if responses != nil || state != "" {
		// The handler reads them with InputFromContext. The decoded
		// params are shared with middleware (read-only): a copy.
		c := *p
		c.InputResponses, c.RequestState = nil, ""
		p = &c
	}
	ctx = req.withProgress(ctx)
	return rounds(r, ctx, methodPromptsGet, p.Name, args, responses, state, func(ctx context.Context) (any, error) {
		res, err := src.GetPrompt(ctx, p)
		return sourceAnswer(res, err, ss.featureError, "prompt")
	})
}
