//go:build !keel_omit2025

package mcp

import "github.com/keelmcp/keel/internal/revision"

// Downgrading of resources, templates, prompts and their results: nothing
// a negotiated revision lacks is ever sent (see rev2025_downgrade.go). Inputs are
// shared and never modified; copies are made only when something must go.

// downgradeList applies f to each element and returns the input itself
// when f changed nothing.
func downgradeList[T any](in []*T, f func(*T) *T) []*T {
	var out []*T
	for i, x := range in {
		d := f(x)
		if d != x && out == nil {
			out = make([]*T, len(in))
			copy(out, in[:i])
		}
		if out != nil {
			out[i] = d
		}
	}
	if out == nil {
		return in
	}
	return out
}

// stripLastModified returns a without lastModified (2025-06-18).
func stripLastModified(a *Annotations) *Annotations {
	if a == nil || a.LastModified == "" {
		return a
	}
	c := *a
	c.LastModified = ""
	return &c
}

func downgradeResources(list []*Resource, v string) []*Resource {
	if revision.AtLeast(v, Version20251125) {
		return list
	}
	old := !revision.AtLeast(v, Version20250618)
	return downgradeList(list, func(r *Resource) *Resource {
		if r.Icons == nil && (!old || r.Title == "" && r.Meta == nil && (r.Annotations == nil || r.Annotations.LastModified == "")) {
			return r
		}
		c := *r
		c.Icons = nil
		if old {
			c.Title, c.Meta, c.Annotations = "", nil, stripLastModified(r.Annotations)
		}
		return &c
	})
}

func downgradeTemplates(list []*ResourceTemplate, v string) []*ResourceTemplate {
	if revision.AtLeast(v, Version20251125) {
		return list
	}
	old := !revision.AtLeast(v, Version20250618)
	return downgradeList(list, func(t *ResourceTemplate) *ResourceTemplate {
		if t.Icons == nil && (!old || t.Title == "" && t.Meta == nil && (t.Annotations == nil || t.Annotations.LastModified == "")) {
			return t
		}
		c := *t
		c.Icons = nil
		if old {
			c.Title, c.Meta, c.Annotations = "", nil, stripLastModified(t.Annotations)
		}
		return &c
	})
}

func downgradePrompts(list []*Prompt, v string) []*Prompt {
	if revision.AtLeast(v, Version20251125) {
		return list
	}
	old := !revision.AtLeast(v, Version20250618)
	return downgradeList(list, func(p *Prompt) *Prompt {
		titled := false
		for i := range p.Arguments {
			titled = titled || p.Arguments[i].Title != ""
		}
		if p.Icons == nil && (!old || p.Title == "" && p.Meta == nil && !titled) {
			return p
		}
		c := *p
		c.Icons = nil
		if old {
			c.Title, c.Meta = "", nil
			if titled {
				c.Arguments = make([]PromptArgument, len(p.Arguments))
				for i, a := range p.Arguments {
					a.Title = ""
					c.Arguments[i] = a
				}
			}
		}
		return &c
	})
}

// downgradeReadResult strips the _meta of resource contents (2025-06-18).
func downgradeReadResult(res *ReadResourceResult, v string) *ReadResourceResult {
	if revision.AtLeast(v, Version20250618) {
		return res
	}
	i := 0
	for i < len(res.Contents) && res.Contents[i].Meta == nil {
		i++
	}
	if i == len(res.Contents) {
		return res
	}
	c := *res
	c.Contents = make([]ResourceContents, len(res.Contents))
	for i, rc := range res.Contents {
		rc.Meta = nil
		c.Contents[i] = rc
	}
	return &c
}

// downgradePromptResult makes the messages' content fit revision v (see
// downgradeContent).
func downgradePromptResult(res *GetPromptResult, v string) *GetPromptResult {
	if revision.AtLeast(v, Version20251125) {
		return res
	}
	needs := false
	for i := range res.Messages {
		if needsContentDowngrade(&res.Messages[i].Content, v) {
			needs = true
			break
		}
	}
	if !needs {
		return res
	}
	c := *res
	c.Messages = make([]PromptMessage, len(res.Messages))
	for i, m := range res.Messages {
		m.Content = downgradeContent([]Content{m.Content}, v)[0]
		c.Messages[i] = m
	}
	return &c
}
