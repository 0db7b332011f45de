package apps

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// RendersViews reports whether the client that sent the request ctx
// belongs to renders views, so that a tool handler can fall back to a
// text result when it does not. It reads the capabilities that apply to
// this very request (mcp.Request.ClientCapabilities): in a 2025 session
// those the client declared in initialize, in 2026-07-28 those the
// request's own _meta declares. Outside a request it reports false.
func RendersViews(ctx context.Context) bool {
	req := mcp.RequestFromContext(ctx)
	return req != nil && ClientRendersViews(req.ClientCapabilities())
}

// ClientRendersViews reports whether caps declare the extension
// (capabilities.extensions[ExtensionID]) with MIMEType among its
// mimeTypes, as a host that renders views does.
func ClientRendersViews(caps mcp.ClientCapabilities) bool {
	ext, ok := caps.Extensions[ExtensionID].(map[string]any)
	if !ok {
		return false
	}
	types, _ := ext["mimeTypes"].([]any)
	for _, t := range types {
		if s, ok := t.(string); ok && strings.EqualFold(s, MIMEType) {
			return true
		}
	}
	return false
}

// HideAppOnlyTools returns middleware that leaves the tools only views may
// call (visibility [VisibleToApp]) out of tools/list for clients that do
// not render views: such a client would hand every listed tool to its
// model. A client that renders views gets every tool and, as the extension
// asks of hosts, keeps app-only tools from its model itself. Every tool
// stays callable; tools/call is not filtered. A page may come out shorter
// than the page size, its cursor unchanged.
func HideAppOnlyTools() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			if err != nil || req.Method != "tools/list" {
				return res, err
			}
			list, ok := res.(*mcp.ListToolsResult)
			if !ok || list == nil || ClientRendersViews(req.ClientCapabilities()) {
				return res, err
			}
			var kept []*mcp.Tool // nil until a tool is dropped: the list is shared, never modified
			for i, t := range list.Tools {
				if appOnly(t.Meta) {
					if kept == nil {
						kept = append(make([]*mcp.Tool, 0, len(list.Tools)-1), list.Tools[:i]...)
					}
					continue
				}
				if kept != nil {
					kept = append(kept, t)
				}
			}
			if kept == nil {
				return res, nil
			}
			out := *list
			out.Tools = kept
			return &out, nil
		}
	}
}

// appOnly reports whether a tool's _meta restricts it to views. It reads
// the shapes _meta.ui takes in practice (a ToolMeta, or a map as decoded
// JSON gives) without encoding them.
func appOnly(meta mcp.Meta) bool {
	switch v := meta[MetaKey].(type) {
	case nil:
		return false
	case ToolMeta:
		return v.appOnly()
	case *ToolMeta:
		return v != nil && v.appOnly()
	case map[string]any:
		var vis []Visibility
		switch list := v["visibility"].(type) {
		case []any:
			for _, x := range list {
				s, _ := x.(string)
				vis = append(vis, Visibility(s))
			}
		case []string:
			for _, s := range list {
				vis = append(vis, Visibility(s))
			}
		case []Visibility:
			vis = list
		}
		return ToolMeta{Visibility: vis}.appOnly()
	default:
		m, _ := toolMeta(meta)
		return m.appOnly()
	}
}

// toolMeta returns the ToolMeta in a tool's _meta (zero when it has
// none): a ToolMeta value as ToolMeta.Meta stores it, or any other value
// of that JSON shape.
func toolMeta(meta mcp.Meta) (ToolMeta, error) {
	switch v := meta[MetaKey].(type) {
	case nil:
		return ToolMeta{}, nil
	case ToolMeta:
		return v, nil
	case *ToolMeta:
		return *v, nil
	default:
		var m ToolMeta
		b, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			return ToolMeta{}, fmt.Errorf("%w: %v", ErrInvalidMeta, err)
		}
		return m, nil
	}
}

// resourceMeta returns the ResourceMeta in a resource's _meta, as
// toolMeta does for tools.
func resourceMeta(meta mcp.Meta) (ResourceMeta, error) {
	switch v := meta[MetaKey].(type) {
	case nil:
		return ResourceMeta{}, nil
	case ResourceMeta:
		return v, nil
	case *ResourceMeta:
		return *v, nil
	default:
		var m ResourceMeta
		b, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			return ResourceMeta{}, fmt.Errorf("%w: %v", ErrInvalidMeta, err)
		}
		return m, nil
	}
}

// Check validates the views and links of reg, as a server does at
// start-up: every tool's _meta.ui is well formed (ErrInvalidMeta) and
// links to a registered static resource (ErrUnknownView) of MIME type
// MIMEType (ErrNotAView); every view's CSP origins are well formed
// (ErrInvalidDomain). It returns every problem found, joined.
func Check(reg *registry.Registry) error {
	ctx := context.Background()
	resources, err := reg.ListResources(ctx)
	if err != nil {
		return err
	}
	mimeOf := make(map[string]string, len(resources))
	var errs []error
	for _, r := range resources {
		mimeOf[r.URI] = r.MimeType
		if !strings.EqualFold(r.MimeType, MIMEType) {
			continue
		}
		m, err := resourceMeta(r.Meta)
		if err == nil {
			err = m.Validate()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("view %s: %w", r.URI, err))
		}
	}
	for _, t := range reg.Tools() {
		def := t.Definition()
		m, err := toolMeta(def.Meta)
		if legacy, ok := def.Meta[LegacyResourceURIKey].(string); ok && err == nil && m.ResourceURI == "" {
			m.ResourceURI = legacy // a tool that names its view the older way only
		}
		if err == nil {
			err = m.Validate()
		}
		if err == nil && m.ResourceURI != "" {
			if legacy, ok := def.Meta[LegacyResourceURIKey].(string); ok && legacy != m.ResourceURI {
				err = fmt.Errorf("%w: %s is %q but %s.resourceUri is %q", ErrInvalidMeta, LegacyResourceURIKey, legacy, MetaKey, m.ResourceURI)
			} else if mime, ok := mimeOf[m.ResourceURI]; !ok {
				err = fmt.Errorf("%w %s (register it with AddView)", ErrUnknownView, m.ResourceURI)
			} else if !strings.EqualFold(mime, MIMEType) {
				err = fmt.Errorf("%w: %s has MIME type %q, want %q", ErrNotAView, m.ResourceURI, mime, MIMEType)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("tool %s: %w", def.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Enable checks reg (Check) and returns a copy of opts (nil: defaults)
// that serves its views: ExtensionID declared among the server's
// extensions (2026-07-28 clients read it on server/discover; the 2025
// revisions have no such member, and their hosts go by the tools' _meta)
// and HideAppOnlyTools as the outermost middleware.
func Enable(reg *registry.Registry, opts *mcp.ServerOptions) (*mcp.ServerOptions, error) {
	if err := Check(reg); err != nil {
		return nil, err
	}
	var o mcp.ServerOptions
	if opts != nil {
		o = *opts
	}
	caps := mcp.ServerCapabilities{}
	if o.Capabilities != nil {
		caps = *o.Capabilities
	}
	caps.Extensions = maps.Clone(caps.Extensions)
	if caps.Extensions == nil {
		caps.Extensions = map[string]any{}
	}
	if _, ok := caps.Extensions[ExtensionID]; !ok {
		caps.Extensions[ExtensionID] = map[string]any{}
	}
	o.Capabilities = &caps
	o.Middleware = append([]mcp.Middleware{HideAppOnlyTools()}, o.Middleware...)
	return &o, nil
}
