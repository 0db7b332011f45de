package mcp

import (
	"context"
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// featureNotification hands task status, resource updates and
// list_changed notifications to their typed callbacks.
func (r *clientReader) featureNotification(m *jsonrpc.Message) {
	r.taskStatus(m) // the 2025-11-25 tasks (rev2025_client_tasks.go)
	switch m.Method {
	case notificationResourceUpdated:
		if r.opts.OnResourceUpdated != nil {
			var p resourceUpdatedNotificationParams
			if m.Params == nil || json.Unmarshal(m.Params, &p) != nil {
				r.log.Warn("mcp: client received a malformed notifications/resources/updated")
				return
			}
			r.opts.OnResourceUpdated(p.URI)
		}
	case notificationToolsListChanged, notificationResourcesListChanged, notificationPromptsListChanged:
		if r.opts.OnListChanged != nil {
			r.opts.OnListChanged(m.Method)
		}
	}
}

// fetchPage calls a paginated list method for the page at cursor ("" =
// the first) and decodes its result into a new R.
func fetchPage[R any](ctx context.Context, c *Client, method, cursor string) (*R, error) {
	var res R
	if err := c.Call(ctx, method, &paginatedParams{Cursor: cursor}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// listAll follows nextCursor from the first page to the last, collecting
// the items of every page.
func listAll[T any](ctx context.Context, page func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if next == cursor { // the server would lead the loop in circles
			return nil, fmt.Errorf("mcp: the server answered cursor %q with the same nextCursor", cursor)
		}
		cursor = next
	}
}

// ListResources fetches one page of resources ("" = the first page).
func (c *Client) ListResources(ctx context.Context, cursor string) (*ListResourcesResult, error) {
	return fetchPage[ListResourcesResult](ctx, c, methodResourcesList, cursor)
}

// ListAllResources follows nextCursor until the last page.
func (c *Client) ListAllResources(ctx context.Context) ([]*Resource, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*Resource, string, error) {
		res, err := c.ListResources(ctx, cursor)
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
}

// ListResourceTemplates fetches one page of resource templates ("" = the
// first page).
func (c *Client) ListResourceTemplates(ctx context.Context, cursor string) (*ListResourceTemplatesResult, error) {
	return fetchPage[ListResourceTemplatesResult](ctx, c, methodResourcesTemplatesList, cursor)
}

// ListAllResourceTemplates follows nextCursor until the last page.
func (c *Client) ListAllResourceTemplates(ctx context.Context) ([]*ResourceTemplate, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*ResourceTemplate, string, error) {
		res, err := c.ListResourceTemplates(ctx, cursor)
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	})
}

// ReadResource reads the resource uri. An unknown resource is an *Error
// with code CodeResourceNotFound (-32002) from a 2025 server, and
// CodeInvalidParams (-32602) with data {"uri"} in revision 2026-07-28.
func (c *Client) ReadResource(ctx context.Context, uri string) (*ReadResourceResult, error) {
	var res ReadResourceResult
	if err := c.Call(ctx, methodResourcesRead, &ReadResourceParams{URI: uri}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListPrompts fetches one page of prompts ("" = the first page).
func (c *Client) ListPrompts(ctx context.Context, cursor string) (*ListPromptsResult, error) {
	return fetchPage[ListPromptsResult](ctx, c, methodPromptsList, cursor)
}

// ListAllPrompts follows nextCursor until the last page.
func (c *Client) ListAllPrompts(ctx context.Context) ([]*Prompt, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*Prompt, string, error) {
		res, err := c.ListPrompts(ctx, cursor)
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
}

// GetPrompt renders the named prompt with args (nil for none). An unknown
// prompt or a missing required argument is an *Error with code -32602.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*GetPromptResult, error) {
	var res GetPromptResult
	if err := c.Call(ctx, methodPromptsGet, &GetPromptParams{Name: name, Arguments: args}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Complete asks for completions of an argument of a prompt (Ref.Type
// RefPrompt) or a variable of a resource template (RefResource). Members
// the negotiated revision lacks (Context and Ref.Title before 2025-06-18)
// are not sent.
func (c *Client) Complete(ctx context.Context, p *CompleteParams) (*CompleteResult, error) {
	if !revision.AtLeast(c.ProtocolVersion(), Version20250618) && (p.Context != nil || p.Ref.Title != "") {
		q := *p
		q.Context, q.Ref.Title = nil, ""
		p = &q
	}
	var res CompleteResult
	if err := c.Call(ctx, methodCompletionComplete, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// CompletePrompt asks for completions of argument arg of prompt, whose
// partial value is value; args are the prompt's arguments already chosen
// (sent only to servers of 2025-06-18 and later; nil for none).
func (c *Client) CompletePrompt(ctx context.Context, prompt, arg, value string, args map[string]string) (*Completion, error) {
	return completion(c.Complete(ctx, completeParams(CompleteReference{Type: RefPrompt, Name: prompt}, arg, value, args)))
}

// CompleteTemplate asks for completions of variable name of the resource
// template uriTemplate, whose partial value is value; vars are the
// template's variables already chosen (sent only to servers of 2025-06-18
// and later; nil for none).
func (c *Client) CompleteTemplate(ctx context.Context, uriTemplate, name, value string, vars map[string]string) (*Completion, error) {
	return completion(c.Complete(ctx, completeParams(CompleteReference{Type: RefResource, URI: uriTemplate}, name, value, vars)))
}

// completeParams asks for completions of argument arg of ref, whose
// partial value is value; args (nil for none) are those already chosen.
func completeParams(ref CompleteReference, arg, value string, args map[string]string) *CompleteParams {
	p := &CompleteParams{Ref: ref, Argument: CompleteArgument{Name: arg, Value: value}}
	if args != nil {
		p.Context = &CompleteContext{Arguments: args}
	}
	return p
}

// completion returns the Completion of a completion/complete answer.
func completion(res *CompleteResult, err error) (*Completion, error) {
	if err != nil {
		return nil, err
	}
	return &res.Completion, nil
}
