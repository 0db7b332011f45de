//go:build !keel_omit2025

package mcp

import (
	"github.com/keelmcp/keel/internal/revision"
)

// Downgrading: nothing a negotiated revision lacks is ever sent. These
// functions return their input unchanged when there is nothing to strip, and
// copies otherwise (inputs are shared and never modified).

// downgradeTools strips tool fields newer than revision v.
func downgradeTools(tools []*Tool, v string) []*Tool {
	if revision.ServedPerRequest(v) {
		return withoutExecution(tools)
	}
	if revision.AtLeast(v, Version20251125) {
		return tools
	}
	var out []*Tool
	for i, t := range tools {
		d := downgradeTool(t, v)
		if d != t && out == nil {
			out = make([]*Tool, len(tools))
			copy(out, tools[:i])
		}
		if out != nil {
			out[i] = d
		}
	}
	if out == nil {
		return tools
	}
	return out
}

func downgradeTool(t *Tool, v string) *Tool {
	strip25_11 := t.Icons != nil || t.Execution != nil
	strip25_06 := !revision.AtLeast(v, Version20250618) && (t.Title != "" || t.OutputSchema != nil || t.Meta != nil)
	strip25_03 := !revision.AtLeast(v, Version20250326) && t.Annotations != nil
	if !strip25_11 && !strip25_06 && !strip25_03 {
		return t
	}
	c := *t
	c.Icons, c.Execution = nil, nil
	if !revision.AtLeast(v, Version20250618) {
		c.Title, c.OutputSchema, c.Meta = "", nil, nil
	}
	if !revision.AtLeast(v, Version20250326) {
		c.Annotations = nil
	}
	return &c
}

// downgradeResult strips tool-result fields and content newer than revision v.
func downgradeResult(res *CallToolResult, v string) *CallToolResult {
	if revision.AtLeast(v, Version20251125) {
		return res
	}
	needs := !revision.AtLeast(v, Version20250618) && (res.StructuredContent != nil || res.Meta != nil)
	for i := range res.Content {
		if needsContentDowngrade(&res.Content[i], v) {
			needs = true
			break
		}
	}
	if !needs {
		return res
	}
	c := *res
	if !revision.AtLeast(v, Version20250618) {
		c.StructuredContent, c.Meta = nil, nil
	}
	c.Content = downgradeContent(res.Content, v)
	return &c
}

func needsContentDowngrade(b *Content, v string) bool {
	if b.Icons != nil {
		return true
	}
	if !revision.AtLeast(v, Version20250618) {
		if b.Type == ContentResourceLink || b.Meta != nil || (b.Annotations != nil && b.Annotations.LastModified != "") ||
			(b.Resource != nil && b.Resource.Meta != nil) {
			return true
		}
	}
	return !revision.AtLeast(v, Version20250326) && b.Type == ContentAudio
}

// downgradeContent returns content blocks fit for revision v: members the
// revision lacks are dropped, and block types it lacks become text blocks
// that describe them (audio before 2025-03-26, resource_link before
// 2025-06-18). The input is not modified.
func downgradeContent(blocks []Content, v string) []Content {
	out := make([]Content, len(blocks))
	for i, b := range blocks {
		if !needsContentDowngrade(&b, v) {
			out[i] = b
			continue
		}
		b.Icons = nil
		if !revision.AtLeast(v, Version20250618) {
			b.Meta = nil
			if b.Annotations != nil && b.Annotations.LastModified != "" {
				a := *b.Annotations
				a.LastModified = ""
				b.Annotations = &a
			}
			if b.Resource != nil && b.Resource.Meta != nil {
				r := *b.Resource
				r.Meta = nil
				b.Resource = &r
			}
			if b.Type == ContentResourceLink {
				b = Content{Type: ContentText, Text: "resource link: " + b.URI, Annotations: b.Annotations}
			}
		}
		if !revision.AtLeast(v, Version20250326) && b.Type == ContentAudio {
			b = Content{Type: ContentText, Text: "[audio content (" + b.MimeType + ") omitted: not supported by protocol revision " + v + "]", Annotations: b.Annotations}
		}
		out[i] = b
	}
	return out
}

// shapeResult returns result v without what revision ver lacks (copies
// where something is stripped; v is never modified).
func shapeResult(v any, ver string) any {
	switch x := v.(type) {
	case *ListToolsResult:
		if t := downgradeTools(x.Tools, ver); !sameSlice(t, x.Tools) {
			c := *x
			c.Tools = t
			return &c
		}
	case *CallToolResult:
		return downgradeResult(x, ver)
	case *ListResourcesResult:
		if l := downgradeResources(x.Resources, ver); !sameSlice(l, x.Resources) {
			c := *x
			c.Resources = l
			return &c
		}
	case *ListResourceTemplatesResult:
		if l := downgradeTemplates(x.ResourceTemplates, ver); !sameSlice(l, x.ResourceTemplates) {
			c := *x
			c.ResourceTemplates = l
			return &c
		}
	case *ListPromptsResult:
		if l := downgradePrompts(x.Prompts, ver); !sameSlice(l, x.Prompts) {
			c := *x
			c.Prompts = l
			return &c
		}
	case *ReadResourceResult:
		return downgradeReadResult(x, ver)
	case *GetPromptResult:
		return downgradePromptResult(x, ver)
	}
	return v
}

// completionsIn reports whether revision v has the completions
// capability: from 2025-03-26, which added it.
func completionsIn(v string) bool { return revision.AtLeast(v, Version20250326) }

// progressMessage returns the message of a progress notification to a
// client of revision v: none before 2025-03-26, which added it.
func progressMessage(message, v string) string {
	if !revision.AtLeast(v, Version20250326) {
		return ""
	}
	return message
}

// completionContextIn reports whether a completion request of revision v
// can carry a context: from 2025-06-18, which added it.
func completionContextIn(v string) bool { return revision.AtLeast(v, Version20250618) }

// supportedVersions lists the protocol revisions keel negotiates, newest first.
var supportedVersions = []string{Version20251125, Version20250618, Version20250326, Version20241105}
