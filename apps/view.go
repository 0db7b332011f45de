package apps

import (
	"context"
	"fmt"
	"io/fs"
	"unicode/utf8"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// MaxViewBytes bounds the HTML of one view: it is sent whole in one
// resources/read answer, which must stay under the transports' default
// message limit (4 MiB) once JSON-escaped.
const MaxViewBytes = 2 << 20

// View describes a view to register: its ui:// URI, how it is listed and
// its _meta.ui.
type View struct {
	// URI is the view's ui:// URI, the one tools name in
	// ToolMeta.ResourceURI.
	URI string
	// Name is the resource's name in resources/list (required).
	Name string
	// Title is the resource's human-readable title.
	Title string
	// Description says what the view shows.
	Description string
	// Meta is the view's _meta.ui, published on the resources/list entry
	// and on the contents resources/read returns (where hosts read it).
	Meta ResourceMeta
}

// AddView registers html (a whole HTML document, UTF-8, with its scripts
// and styles inline: a host loads nothing else from the server) as the
// static resource v.URI with MIME type MIMEType. It fails on a URI outside
// ui://, a malformed CSP origin (ErrInvalidDomain), HTML that is not
// UTF-8 or is over MaxViewBytes (ErrViewTooLarge), and anything
// registry.Registry.AddResource refuses. html is copied.
func AddView(reg *registry.Registry, v View, html []byte) error {
	if err := checkViewURI(v.URI); err != nil {
		return fmt.Errorf("apps: view %s: %w", v.URI, err)
	}
	if err := v.Meta.Validate(); err != nil {
		return fmt.Errorf("apps: view %s: %w", v.URI, err)
	}
	if len(html) > MaxViewBytes {
		return fmt.Errorf("apps: view %s: %w: %d bytes, over MaxViewBytes (%d)", v.URI, ErrViewTooLarge, len(html), MaxViewBytes)
	}
	if !utf8.Valid(html) {
		return fmt.Errorf("apps: view %s: %w: the HTML is not valid UTF-8", v.URI, ErrInvalidMeta)
	}
	meta := v.Meta.Meta()
	size := int64(len(html))
	text := string(html)
	contents := []mcp.ResourceContents{{URI: v.URI, MimeType: MIMEType, Text: &text, Meta: meta}}
	def := &mcp.Resource{URI: v.URI, Name: v.Name, Title: v.Title, Description: v.Description, MimeType: MIMEType, Size: &size, Meta: meta}
	return reg.AddResource(def, func(context.Context, string) ([]mcp.ResourceContents, error) { return contents, nil })
}

// AddViewFS registers the file name of fsys (an embed.FS, typically) as a
// view, as AddView does; the file is read once, here.
func AddViewFS(reg *registry.Registry, v View, fsys fs.FS, name string) error {
	html, err := fs.ReadFile(fsys, name)
	if err != nil {
		return fmt.Errorf("apps: view %s: %w", v.URI, err)
	}
	return AddView(reg, v, html)
}
