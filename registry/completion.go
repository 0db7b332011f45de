package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/keelmcp/keel/mcp"
)

// Completer offers completions for a prompt argument or a resource template
// variable whose partial value is value; args are the arguments (or
// variables) the client already chose, nil when it sent none (clients
// before 2025-06-18 never send them). It returns the values, best first,
// and the number of values available (0: len(values)). Clients receive at
// most mcp.MaxCompletionValues values; the registry keeps the first ones
// and reports the rest through total and hasMore.
type Completer func(ctx context.Context, value string, args map[string]string) (values []string, total int, err error)

// CompleteFrom returns a Completer offering the options that start with the
// partial value, ignoring case, in the order given.
func CompleteFrom(options ...string) Completer {
	options = slices.Clone(options)
	return func(_ context.Context, value string, _ map[string]string) ([]string, int, error) {
		var out []string
		for _, o := range options {
			if len(o) >= len(value) && strings.EqualFold(o[:len(value)], value) {
				out = append(out, o)
			}
		}
		return out, len(out), nil
	}
}

var _ mcp.CompletionSource = (*Registry)(nil)

// Complete answers completion/complete (mcp.CompletionSource) from the
// Completers registered with prompts (PromptOptions.Complete) and resource
// templates (TemplateOptions.Complete). An unknown prompt or template, or
// an argument it does not have, is an *mcp.Error with code -32602; an
// argument without a Completer gets no values.
func (r *Registry) Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var c Completer
	name := p.Argument.Name
	switch p.Ref.Type {
	case mcp.RefPrompt:
		pr, ok := r.prm.load().byName[p.Ref.Name]
		if !ok {
			return nil, unknownPromptError(p.Ref.Name)
		}
		if !slices.ContainsFunc(pr.def.Arguments, func(a mcp.PromptArgument) bool { return a.Name == name }) {
			return nil, invalidParamsError(fmt.Sprintf("prompt %q has no argument %q", p.Ref.Name, name),
				map[string]any{"prompt": p.Ref.Name, "argument": name})
		}
		c = pr.complete[name]
	case mcp.RefResource:
		t, ok := r.res.load().byTemplate[p.Ref.URI]
		if !ok {
			return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", p.Ref.URI),
				Data: &mcp.StructuredError{Code: mcp.ErrNotFound, Message: fmt.Sprintf("resource template %q not found", p.Ref.URI),
					Details: map[string]any{"uriTemplate": p.Ref.URI}}}
		}
		if !slices.Contains(t.vars, name) {
			return nil, invalidParamsError(fmt.Sprintf("resource template %q has no variable %q", p.Ref.URI, name),
				map[string]any{"uriTemplate": p.Ref.URI, "argument": name})
		}
		c = t.complete[name]
	default:
		return nil, invalidParamsError(fmt.Sprintf("unknown reference type %q", p.Ref.Type), nil)
	}
	if c == nil {
		return &mcp.CompleteResult{Completion: mcp.Completion{Values: []string{}}}, nil
	}
	var args map[string]string
	if p.Context != nil {
		args = p.Context.Arguments
	}
	values, total, err := c(ctx, p.Argument.Value, args)
	if err != nil {
		return nil, err
	}
	return &mcp.CompleteResult{Completion: completion(values, total)}, nil
}

// completion caps values at mcp.MaxCompletionValues and sets total and
// hasMore.
func completion(values []string, total int) mcp.Completion {
	total = max(total, len(values))
	if len(values) > mcp.MaxCompletionValues {
		values = values[:mcp.MaxCompletionValues:mcp.MaxCompletionValues]
	}
	if values == nil {
		values = []string{}
	}
	t := int64(total)
	return mcp.Completion{Values: values, Total: &t, HasMore: total > len(values)}
}

// invalidParamsError is a -32602 error carrying an INVALID_ARGUMENT
// StructuredError.
func invalidParamsError(msg string, details map[string]any) *mcp.Error {
	return &mcp.Error{Code: mcp.CodeInvalidParams, Message: msg,
		Data: &mcp.StructuredError{Code: mcp.ErrInvalidArgument, Message: msg, Details: details}}
}
