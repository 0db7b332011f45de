package mcp

import (
	"fmt"
	"reflect"
)

// toolSourceWrapper is implemented by a ToolSource that wraps another one
// (a middleware chain around a registry): Unwrap returns the inner source.
type toolSourceWrapper interface {
	Unwrap() ToolSource
}

// registryFeatures checks ServerOptions.Registry against the feature
// fields and returns the options with every feature the registry serves
// filled in. A feature field already set must be the registry itself (for
// Tools, also a ToolSource that unwraps to it); anything else is an
// *OptionError, since the server would otherwise serve two catalogs.
func (o *ServerOptions) registryFeatures() (ServerOptions, error) {
	out := *o
	reg := o.Registry
	if reg == nil {
		return out, nil
	}
	served := 0
	if s, ok := reg.(ToolSource); ok {
		served++
		if out.Tools == nil {
			out.Tools = s
		} else if !wraps(out.Tools, s) {
			return out, conflict("Tools", out.Tools)
		}
	}
	if s, ok := reg.(ResourceSource); ok {
		served++
		if out.Resources == nil {
			out.Resources = s
		} else if !same(out.Resources, s) {
			return out, conflict("Resources", out.Resources)
		}
	}
	if s, ok := reg.(PromptSource); ok {
		served++
		if out.Prompts == nil {
			out.Prompts = s
		} else if !same(out.Prompts, s) {
			return out, conflict("Prompts", out.Prompts)
		}
	}
	if s, ok := reg.(CompletionSource); ok {
		served++
		if out.Completions == nil {
			out.Completions = s
		} else if !same(out.Completions, s) {
			return out, conflict("Completions", out.Completions)
		}
	}
	if served == 0 {
		return out, &OptionError{Option: "Registry", Problem: fmt.Sprintf("a %T serves no feature: it implements none of ToolSource, ResourceSource, PromptSource, CompletionSource", reg)}
	}
	return out, nil
}

// wraps reports whether src is inner or wraps it (through Unwrap).
func wraps(src, inner ToolSource) bool {
	for depth := 0; src != nil && depth < 64; depth++ {
		if same(src, inner) {
			return true
		}
		w, ok := src.(toolSourceWrapper)
		if !ok {
			return false
		}
		src = w.Unwrap()
	}
	return false
}

// same reports whether a and b are the same value, without the panic of
// == on two interfaces holding the same uncomparable type.
func same(a, b any) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta != nil && ta.Comparable() && a == b
}

func conflict(field string, v any) error {
	return &OptionError{Option: field, Problem: fmt.Sprintf("%s is a %T that is not Registry; with Registry set, leave %s nil (Registry fills it) or set it to Registry or to a middleware chain around it", field, v, field)}
}
