package mcp

import (
	"context"

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

func init() {
	requestHandlers[MethodPromptsList] = func(ss *Session, m *jsonrpc.Message, r responder) (func(), bool) {
		if ss.server.opts.Prompts == nil {
			return nil, false
		}
		ss.handlePromptsList(m, r)
		return nil, true
	}
	requestHandlers[MethodPromptsGet] = func(ss *Session, m *jsonrpc.Message, r responder) (func(), bool) {
		if ss.server.opts.Prompts == nil {
			return nil, false
		}
		return ss.handlePromptsGet(m, r), true
	}
}

func (ss *Session) handlePromptsList(m *jsonrpc.Message, r responder) {
	p, ok := decodePaginated(m, r)
	if !ok {
		return
	}
	list, err := ss.server.opts.Prompts.ListPrompts(ss.requestContext(ss.messageContext()))
	if err != nil {
		r.error(ss.featureError(err))
		return
	}
	page, next, perr := paginate(list, func(x *Prompt) string { return x.Name }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		r.error(perr)
		return
	}
	r.result(&ListPromptsResult{Prompts: downgradePrompts(page, ss.ProtocolVersion()), NextCursor: next})
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
	src, v := ss.server.opts.Prompts, ss.ProtocolVersion()
	return ss.featureJob(m, r, func(ctx context.Context) (any, *Error) {
		res, err := src.GetPrompt(ctx, p)
		if err != nil {
			return nil, ss.featureError(err)
		}
		if res == nil {
			return nil, &Error{Code: CodeInternalError, Message: "Internal error: prompt source returned no result"}
		}
		return downgradePromptResult(res, v), nil
	})
}
