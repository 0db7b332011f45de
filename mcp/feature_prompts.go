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

// promptParams returns the params of a prompts/get, as Params decoded
// them (a middleware's decoding, if one did): shared, read-only.
func promptParams(req *Request) (*GetPromptParams, *Error) {
	if req.Params == nil || jsontext.Value(req.Params).Kind() != '{' {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: prompts/get requires params {name, arguments}"}
	}
	p, e := paramsOf[GetPromptParams](req)
	if e != nil {
		return nil, e
	}
	if p.Name == "" {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: name is required"}
	}
	return p, nil
}

// promptInput is the inputReader of prompts/get: the prompt's name, and
// its arguments as what a requestState is bound to.
func promptInput(_ context.Context, req *Request) (inputTarget, error) {
	p, e := promptParams(req)
	if e != nil {
		return inputTarget{}, e
	}
	args, err := json.Marshal(p.Arguments, json.Deterministic(true))
	if err != nil {
		return inputTarget{}, invalidParams(err)
	}
	return inputTarget{name: p.Name, args: args, responses: p.InputResponses, state: p.RequestState}, nil
}

// handlePromptsGet serves prompts/get, in the input rounds its row
// declares (promptInput read its params first): its Input is its
// context's.
func handlePromptsGet(ctx context.Context, req *Request) (any, error) {
	p, e := promptParams(req) // as promptInput decoded them
	if e != nil {
		return nil, e
	}
	if p.InputResponses != nil || p.RequestState != "" {
		// The handler reads them with InputFromContext. The decoded
		// params are shared with middleware (read-only): a copy.
		c := *p
		c.InputResponses, c.RequestState = nil, ""
		p = &c
	}
	ss := req.Session
	res, err := ss.server.opts.Prompts.GetPrompt(req.withProgress(ctx), p)
	return sourceAnswer(res, err, ss.featureError, "prompt")
}
