package mcp

import (
	"context"
	"errors"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/internal/jsonrpc"
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
	// turns into one); any other error becomes -32603.
	GetPrompt(ctx context.Context, p *GetPromptParams) (*GetPromptResult, error)
}

func (ss *Session) handlePromptsList(m *jsonrpc.Message, r responder) {
	p, ok := decodePaginated(m, r)
	if !ok {
		return
	}
	list, err := ss.server.opts.Prompts.ListPrompts(r.context(ss.messageContext()))
	if err != nil {
		r.error(ss.featureError(err))
		return
	}
	page, next, perr := paginate(list, func(x *Prompt) string { return x.Name }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		r.error(perr)
		return
	}
	r.result(&ListPromptsResult{Prompts: downgradePrompts(page, r.version()), NextCursor: next})
}

func (ss *Session) handlePromptsGet(m *jsonrpc.Message, r responder) func() {
	if m.Params == nil || m.Params.Kind() != '{' {
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: prompts/get requires params {name, arguments}"})
		return nil
	}
	p := new(GetPromptParams)
	if err := json.Unmarshal(m.Params, p); err != nil {
		r.error(invalidParams(err))
		return nil
	}
	if p.Name == "" {
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: name is required"})
		return nil
	}
	src, v := ss.server.opts.Prompts, r.version()
	args, err := json.Marshal(p.Arguments, json.Deterministic(true))
	if err != nil {
		r.error(invalidParams(err))
		return nil
	}
	in, ok := r.inputFor(r.context(ss.messageContext()), MethodPromptsGet, p.Name, args, p.InputResponses, p.RequestState)
	if !ok {
		return nil
	}
	p.InputResponses, p.RequestState = nil, ""
	return ss.featureJob(m, r, func(ctx context.Context) (any, error) {
		return r.withInput(ctx, in, func(ctx context.Context) (any, error) {
			res, err := src.GetPrompt(ctx, p)
			var ir *InputRequiredError
			switch {
			case errors.As(err, &ir):
				return nil, ir
			case err != nil:
				return nil, ss.featureError(err)
			case res == nil:
				return nil, &Error{Code: CodeInternalError, Message: "Internal error: prompt source returned no result"}
			}
			return downgradePromptResult(res, v), nil
		})
	})
}
