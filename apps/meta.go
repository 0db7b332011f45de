package apps

import (
	"fmt"
	"strings"

	"github.com/keelmcp/keel/mcp"
)

// ExtensionID is the identifier of the MCP Apps extension: the key under
// which a host declares it in its client capabilities (extensions) and a
// server in its own.
const ExtensionID = "io.modelcontextprotocol/ui"

// MIMEType is the MIME type of a view's HTML: a ui:// resource with this
// type is an MCP App.
const MIMEType = "text/html;profile=mcp-app"

// Scheme is the URI scheme of views ("ui://...").
const Scheme = "ui://"

// MetaKey is the _meta key that holds the extension's metadata, of a
// tool (ToolMeta) and of a view (ResourceMeta).
const MetaKey = "ui"

// LegacyResourceURIKey is the flat _meta key that hosts written before
// _meta.ui existed read the view's URI from. ToolMeta.Meta sets it beside
// _meta.ui.resourceUri.
const LegacyResourceURIKey = "ui/resourceUri"

// Visibility says who may see and call a tool.
type Visibility string

// The audiences of a tool. A tool without a Visibility is visible to both.
const (
	// VisibleToModel: the model sees the tool in tools/list and may call it.
	VisibleToModel Visibility = "model"
	// VisibleToApp: the views of this server may call the tool through
	// their host.
	VisibleToApp Visibility = "app"
)

// ToolMeta is a tool's _meta.ui: the view that shows the tool's result
// and who may call the tool.
type ToolMeta struct {
	// ResourceURI is the ui:// URI of the view the host renders for the
	// tool's result; empty for a tool without a view (one that only a
	// view calls, for example).
	ResourceURI string `json:"resourceUri,omitempty"`
	// Visibility lists who may call the tool; nil means both the model
	// and the app. [VisibleToApp] keeps the tool from the model.
	Visibility []Visibility `json:"visibility,omitempty"`
}

// Meta returns the _meta of a tool with this metadata, for
// registry.ToolOptions.Meta: m under MetaKey, and the URI under
// LegacyResourceURIKey too when there is one. Enable checks it at
// start-up.
func (m ToolMeta) Meta() mcp.Meta {
	out := mcp.Meta{MetaKey: m}
	if m.ResourceURI != "" {
		out[LegacyResourceURIKey] = m.ResourceURI
	}
	return out
}

// Validate reports whether m is well formed: a ResourceURI in the ui://
// scheme, Visibility values that the extension defines, at least one of
// them if the list is set. It does not look the view up (Enable does).
func (m ToolMeta) Validate() error {
	if m.ResourceURI != "" {
		if err := checkViewURI(m.ResourceURI); err != nil {
			return err
		}
	}
	if m.Visibility != nil && len(m.Visibility) == 0 {
		return fmt.Errorf("%w: an empty visibility list leaves the tool to nobody (omit it for both model and app)", ErrInvalidMeta)
	}
	for _, v := range m.Visibility {
		if v != VisibleToModel && v != VisibleToApp {
			return fmt.Errorf("%w: visibility %q (want %q or %q)", ErrInvalidMeta, v, VisibleToModel, VisibleToApp)
		}
	}
	return nil
}

// appOnly reports whether the tool may be called by views only.
func (m ToolMeta) appOnly() bool {
	return len(m.Visibility) > 0 && !has(m.Visibility, VisibleToModel)
}

func has[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// checkViewURI reports whether uri is a ui:// URI with something after the
// scheme.
func checkViewURI(uri string) error {
	rest, ok := strings.CutPrefix(uri, Scheme)
	if !ok || rest == "" {
		return fmt.Errorf("%w: %q is not a ui:// URI", ErrInvalidMeta, uri)
	}
	if err := mcp.CheckResourceURI(uri); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMeta, err)
	}
	return nil
}

// CSP lists the origins a view may reach beyond its own HTML. The host
// builds the iframe's Content-Security-Policy from it; an empty list
// allows nothing. Each entry is an origin: scheme://host[:port], with
// scheme http, https, ws or wss, and optionally a leading "*." label
// ("https://*.example.com") or port "*".
type CSP struct {
	// ConnectDomains are the origins of fetch, XHR and WebSocket
	// requests (connect-src).
	ConnectDomains []string `json:"connectDomains,omitempty"`
	// ResourceDomains are the origins of scripts, styles, images, fonts
	// and media (script-src, style-src, img-src, font-src, media-src).
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	// FrameDomains are the origins of nested iframes (frame-src).
	FrameDomains []string `json:"frameDomains,omitempty"`
	// BaseURIDomains are the allowed base URIs of the document (base-uri).
	BaseURIDomains []string `json:"baseUriDomains,omitempty"`
}

// Permissions are the browser features a view asks for; a host may grant
// them through the iframe's allow attribute, and a view must not count on
// them.
type Permissions struct {
	// Camera asks for the camera.
	Camera *struct{} `json:"camera,omitzero"`
	// Microphone asks for the microphone.
	Microphone *struct{} `json:"microphone,omitzero"`
	// Geolocation asks for the location.
	Geolocation *struct{} `json:"geolocation,omitzero"`
	// ClipboardWrite asks to write to the clipboard.
	ClipboardWrite *struct{} `json:"clipboardWrite,omitzero"`
}

// Granted returns a permission value for Permissions' fields:
// Permissions{Camera: apps.Granted()}.
func Granted() *struct{} { return &struct{}{} }

// ResourceMeta is a view's _meta.ui: how the host sandboxes and frames it.
type ResourceMeta struct {
	// CSP lists the origins the view may reach (nil: none).
	CSP *CSP `json:"csp,omitzero"`
	// Permissions lists the browser features the view asks for.
	Permissions *Permissions `json:"permissions,omitzero"`
	// Domain asks the host for a dedicated sandbox origin; its form is
	// the host's to define.
	Domain string `json:"domain,omitempty"`
	// PrefersBorder asks for a visible border and background (true) or
	// none (false); nil leaves it to the host.
	PrefersBorder *bool `json:"prefersBorder,omitzero"`
}

// Validate reports whether every CSP origin of m is well formed (an error
// matching ErrInvalidDomain names the first that is not).
func (m ResourceMeta) Validate() error {
	if m.CSP == nil {
		return nil
	}
	for _, l := range []struct {
		field string
		list  []string
	}{
		{"connectDomains", m.CSP.ConnectDomains},
		{"resourceDomains", m.CSP.ResourceDomains},
		{"frameDomains", m.CSP.FrameDomains},
		{"baseUriDomains", m.CSP.BaseURIDomains},
	} {
		for _, d := range l.list {
			if err := ValidateDomain(d); err != nil {
				return fmt.Errorf("csp.%s: %w", l.field, err)
			}
		}
	}
	return nil
}

// Meta returns the _meta of a view with this metadata: m under MetaKey.
func (m ResourceMeta) Meta() mcp.Meta {
	return mcp.Meta{MetaKey: m}
}
