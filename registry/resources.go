package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
)

// ErrDuplicateResource is matched (errors.Is) by the error of a resource or
// resource template registration whose URI (template) is taken.
var ErrDuplicateResource = errors.New("a resource with this URI is already registered")

// ResourceHandler reads a static resource. It returns the contents of the
// resource (or of the resources below it); members left empty are filled
// in: URI with uri, MimeType with the resource's. Return
// mcp.ResourceNotFoundError(uri) (or an error wrapping fs.ErrNotExist) when
// the resource is gone.
type ResourceHandler func(ctx context.Context, uri string) ([]mcp.ResourceContents, error)

// resourceCatalog holds the resources and resource templates of a Registry.
// Like the tools, reads load an immutable snapshot without locking; changes
// are serialized and drop it.
type resourceCatalog struct {
	mu        sync.Mutex
	static    map[string]*staticResource
	templates map[string]*resourceTemplate
	onChange  []func()
	onUpdate  []func(uri string)

	snap atomic.Pointer[resourceSnapshot]
}

type staticResource struct {
	def     *mcp.Resource
	handler ResourceHandler
}

type resourceSnapshot struct {
	byURI      map[string]*staticResource
	resources  []*mcp.Resource // sorted by URI
	byTemplate map[string]*resourceTemplate
	templates  []*mcp.ResourceTemplate // sorted by URI template
	index      *templateIndex
}

var (
	_ mcp.ResourceSource         = (*Registry)(nil)
	_ mcp.ResourceChangeNotifier = (*Registry)(nil)
	_ mcp.ResourceUpdateNotifier = (*Registry)(nil)
)

// AddResource registers a static resource: def describes it (URI and Name
// are required; the URI must be absolute) and h reads it. The definition is
// copied. Registering a URI that is already registered is an error matching
// ErrDuplicateResource, also with the same definition (handlers cannot be
// compared); RemoveResource first to replace it. Every error is a
// *RegistrationError.
func (r *Registry) AddResource(def *mcp.Resource, h ResourceHandler) error {
	if def == nil {
		return &RegistrationError{Kind: KindResource, Err: errors.New("nil definition")}
	}
	fail := func(format string, args ...any) error {
		return &RegistrationError{Kind: KindResource, Tool: def.URI, Err: fmt.Errorf(format, args...)}
	}
	if h == nil {
		return fail("nil handler")
	}
	if err := mcp.CheckResourceURI(def.URI); err != nil {
		return fail("%v", err)
	}
	if err := checkDescribed(def.Name, def.MimeType, def.Annotations, def.Meta); err != nil {
		return fail("%v", err)
	}
	d := *def
	d.Icons = slices.Clone(def.Icons)
	d.Meta = cloneMeta(def.Meta)
	if def.Annotations != nil {
		a := *def.Annotations
		d.Annotations = &a
	}
	_, err := json.Marshal(&d)
	if err != nil {
		return fail("definition not encodable: %v", err)
	}
	return r.addResource(&staticResource{def: &d, handler: h})
}

// AddTextResource registers a static text resource whose contents are
// text. def.MimeType defaults to "text/plain" and def.Size to the length
// of text in bytes.
func (r *Registry) AddTextResource(def *mcp.Resource, text string) error {
	if def == nil {
		return r.AddResource(nil, nil)
	}
	d := *def
	if d.MimeType == "" {
		d.MimeType = "text/plain"
	}
	if d.Size == nil {
		d.Size = ptr(int64(len(text)))
	}
	contents := []mcp.ResourceContents{mcp.TextResourceContents(d.URI, d.MimeType, text)}
	return r.AddResource(&d, func(context.Context, string) ([]mcp.ResourceContents, error) { return contents, nil })
}

// AddBlobResource registers a static binary resource whose contents are
// data, base64-encoded once, here. def.MimeType defaults to
// "application/octet-stream" and def.Size to len(data).
func (r *Registry) AddBlobResource(def *mcp.Resource, data []byte) error {
	if def == nil {
		return r.AddResource(nil, nil)
	}
	d := *def
	if d.MimeType == "" {
		d.MimeType = "application/octet-stream"
	}
	if d.Size == nil {
		d.Size = ptr(int64(len(data)))
	}
	contents := []mcp.ResourceContents{mcp.BlobResourceContents(d.URI, d.MimeType, data)}
	return r.AddResource(&d, func(context.Context, string) ([]mcp.ResourceContents, error) { return contents, nil })
}

// AddResourceTemplate registers a resource template: def.URITemplate is an
// RFC 6570 URI template (levels 1 to 4), parsed and compiled once, here; a
// resources/read of a URI it matches (and no static resource has) runs h
// with the extracted variables. Reads do not scan the templates: they are
// indexed by their literal prefix, and a read tries only the templates
// whose prefix the URI starts with. opts may be nil. Registration rules are
// those of AddResource (ErrDuplicateResource for a registered URI
// template).
func (r *Registry) AddResourceTemplate(def *mcp.ResourceTemplate, h TemplateHandler, opts *TemplateOptions) error {
	if def == nil {
		return &RegistrationError{Kind: KindResourceTemplate, Err: errors.New("nil definition")}
	}
	fail := func(format string, args ...any) error {
		return &RegistrationError{Kind: KindResourceTemplate, Tool: def.URITemplate, Err: fmt.Errorf(format, args...)}
	}
	if h == nil {
		return fail("nil handler")
	}
	if def.URITemplate == "" {
		return fail("URI template is empty")
	}
	tmpl, err := compileTemplate(def.URITemplate)
	if err != nil {
		return fail("invalid RFC 6570 URI template: %v", err)
	}
	if err := checkDescribed(def.Name, def.MimeType, def.Annotations, def.Meta); err != nil {
		return fail("%v", err)
	}
	t := &resourceTemplate{tmpl: tmpl, vars: slices.Clone(tmpl.Varnames()), handler: h}
	t.prefix, t.literals = literalStats(def.URITemplate)
	if opts != nil && len(opts.Complete) > 0 {
		t.complete = make(map[string]Completer, len(opts.Complete))
		for name, c := range opts.Complete {
			if !slices.Contains(t.vars, name) {
				return fail("completion for %q, which is not a variable of the template (variables: %s)", name, strings.Join(t.vars, ", "))
			}
			if c == nil {
				return fail("nil completer for variable %q", name)
			}
			t.complete[name] = c
		}
	}
	d := *def
	d.Icons = slices.Clone(def.Icons)
	d.Meta = cloneMeta(def.Meta)
	if def.Annotations != nil {
		a := *def.Annotations
		d.Annotations = &a
	}
	t.def = &d
	if _, err = json.Marshal(&d); err != nil {
		return fail("definition not encodable: %v", err)
	}
	return r.addTemplate(t)
}

// checkDescribed checks the members resources and templates share.
func checkDescribed(name, mimeType string, a *mcp.Annotations, meta mcp.Meta) error {
	if name == "" {
		return errors.New("name is empty")
	}
	if mimeType != "" {
		if err := mcp.CheckMediaType(mimeType); err != nil {
			return err
		}
	}
	if err := a.Validate(); err != nil {
		return err
	}
	for k := range meta {
		if !ValidMetaKey(k) {
			return fmt.Errorf("_meta key %q does not follow the MCP key rules", k)
		}
	}
	return nil
}

func cloneMeta(m mcp.Meta) mcp.Meta {
	if m == nil {
		return nil
	}
	c := make(mcp.Meta, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (r *Registry) addResource(s *staticResource) error {
	c := &r.res
	c.mu.Lock()
	added := insertUnique(&c.static, s.def.URI, s)
	listeners := c.changed(added)
	c.mu.Unlock()
	return r.registered(added, listeners, KindResource, s.def.URI, ErrDuplicateResource, "resource", "uri")
}

func (r *Registry) addTemplate(t *resourceTemplate) error {
	c := &r.res
	c.mu.Lock()
	added := insertUnique(&c.templates, t.def.URITemplate, t)
	listeners := c.changed(added)
	c.mu.Unlock()
	return r.registered(added, listeners, KindResourceTemplate, t.def.URITemplate, ErrDuplicateResource, "resource template", "uriTemplate")
}

// changed, called with the catalog locked after an insertion, drops the
// cached snapshot when something was added and returns the listeners to
// notify once the lock is released (nil when nothing changed).
func (c *resourceCatalog) changed(added bool) []func() {
	if !added {
		return nil
	}
	c.snap.Store(nil)
	return c.onChange
}

// insertUnique adds v under key in *m (creating the map on first use)
// and reports true, or reports false when key is taken. The caller holds
// the catalog's lock.
func insertUnique[T any](m *map[string]T, key string, v T) (added bool) {
	if _, ok := (*m)[key]; ok {
		return false
	}
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[key] = v
	return true
}

// registered finishes a registration after the catalog's lock is
// released: it reports a taken key as a RegistrationError, logs, and
// notifies the change listeners.
func (r *Registry) registered(added bool, listeners []func(), kind string, key string, errDup error, what, keyName string) error {
	if !added {
		return &RegistrationError{Kind: kind, Tool: key, Err: errDup}
	}
	r.log.Debug("registry: "+what+" registered", keyName, key)
	notify(listeners)
	return nil
}

// RemoveResource unregisters the static resource uri and reports whether
// it was registered. Reads already running finish normally.
func (r *Registry) RemoveResource(uri string) bool {
	return r.removeResource(func(c *resourceCatalog) bool {
		_, ok := c.static[uri]
		delete(c.static, uri)
		return ok
	})
}

// RemoveResourceTemplate unregisters the resource template uriTemplate and
// reports whether it was registered.
func (r *Registry) RemoveResourceTemplate(uriTemplate string) bool {
	return r.removeResource(func(c *resourceCatalog) bool {
		_, ok := c.templates[uriTemplate]
		delete(c.templates, uriTemplate)
		return ok
	})
}

func (r *Registry) removeResource(del func(*resourceCatalog) bool) bool {
	c := &r.res
	c.mu.Lock()
	if !del(c) {
		c.mu.Unlock()
		return false
	}
	c.snap.Store(nil)
	listeners := c.onChange
	c.mu.Unlock()
	notify(listeners)
	return true
}

// OnResourcesChange registers f to be called after every change to the
// set of resources or resource templates (mcp.ResourceChangeNotifier, for
// notifications/resources/list_changed). f runs synchronously in the
// goroutine that made the change, outside the registry's locks.
func (r *Registry) OnResourcesChange(f func()) {
	if f == nil {
		return
	}
	r.res.mu.Lock()
	r.res.onChange = append(slices.Clip(r.res.onChange), f)
	r.res.mu.Unlock()
}

// OnResourceUpdated registers f to be called with the URI given to each
// NotifyResourceUpdated (mcp.ResourceUpdateNotifier, for
// notifications/resources/updated to subscribers).
func (r *Registry) OnResourceUpdated(f func(uri string)) {
	if f == nil {
		return
	}
	r.res.mu.Lock()
	r.res.onUpdate = append(slices.Clip(r.res.onUpdate), f)
	r.res.mu.Unlock()
}

// NotifyResourceUpdated reports that the contents of the resource uri (a
// static resource, one a template serves, or one below either) changed:
// servers send notifications/resources/updated to the sessions subscribed
// to it. Call it after the change; it does not block on the network.
func (r *Registry) NotifyResourceUpdated(uri string) {
	r.res.mu.Lock()
	listeners := r.res.onUpdate
	r.res.mu.Unlock()
	for _, f := range listeners {
		f(uri)
	}
}

func (c *resourceCatalog) load() *resourceSnapshot {
	if s := c.snap.Load(); s != nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.snap.Load(); s != nil {
		return s
	}
	s := &resourceSnapshot{byURI: make(map[string]*staticResource, len(c.static)),
		byTemplate: make(map[string]*resourceTemplate, len(c.templates))}
	for uri, x := range c.static {
		s.byURI[uri] = x
		s.resources = append(s.resources, x.def)
	}
	slices.SortFunc(s.resources, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
	ts := make([]*resourceTemplate, 0, len(c.templates))
	for raw, t := range c.templates {
		s.byTemplate[raw] = t
		s.templates = append(s.templates, t.def)
		ts = append(ts, t)
	}
	slices.SortFunc(s.templates, func(a, b *mcp.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	s.index = newTemplateIndex(ts)
	c.snap.Store(s)
	return s
}

// ListResources returns the static resources sorted by URI
// (mcp.ResourceSource). The slice is cached until the set changes and is
// shared: do not modify it or its elements.
func (r *Registry) ListResources(context.Context) ([]*mcp.Resource, error) {
	return r.res.load().resources, nil
}

// ListResourceTemplates returns the resource templates sorted by URI
// template (mcp.ResourceSource). The slice is cached until the set changes
// and is shared: do not modify it or its elements.
func (r *Registry) ListResourceTemplates(context.Context) ([]*mcp.ResourceTemplate, error) {
	return r.res.load().templates, nil
}

// ReadResource reads a resource (mcp.ResourceSource): the static resource
// with the URI if there is one, else the most specific template that
// matches it (the longest literal prefix, then the most literal text). An
// unknown URI is mcp.ResourceNotFoundError. Contents the handler returns
// get the URI and MIME type they lack, and must hold text or blob.
func (r *Registry) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	s := r.res.load()
	var contents []mcp.ResourceContents
	var mimeType string
	var err error
	if x, ok := s.byURI[p.URI]; ok {
		mimeType = x.def.MimeType
		contents, err = x.handler(ctx, p.URI)
	} else if t, vars, _ := s.index.match(p.URI); t != nil {
		mimeType = t.def.MimeType
		contents, err = t.handler(ctx, p.URI, vars)
	} else {
		return nil, mcp.ResourceNotFoundError(p.URI)
	}
	if err != nil {
		return nil, err
	}
	if err := checkContents(contents, p.URI); err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: fillContents(contents, p.URI, mimeType)}, nil
}

// fillContents returns contents with empty URIs and MIME types filled in,
// copying only when something is missing.
func fillContents(cs []mcp.ResourceContents, uri, mimeType string) []mcp.ResourceContents {
	if cs == nil {
		return []mcp.ResourceContents{}
	}
	missing := false
	for i := range cs {
		missing = missing || cs[i].URI == "" || cs[i].MimeType == "" && mimeType != ""
	}
	if !missing {
		return cs
	}
	out := slices.Clone(cs)
	for i := range out {
		if out[i].URI == "" {
			out[i].URI = uri
		}
		if out[i].MimeType == "" {
			out[i].MimeType = mimeType
		}
	}
	return out
}

// checkContents reports contents that hold neither or both of text and
// blob: an INTERNAL error (the handler is at fault, not the client).
func checkContents(cs []mcp.ResourceContents, uri string) error {
	for i := range cs {
		if (cs[i].Text == nil) == (cs[i].Blob == nil) {
			return &mcp.StructuredError{Code: mcp.ErrInternal,
				Message: fmt.Sprintf("resource handler for %s returned contents with neither or both of text and blob", uri),
				Details: map[string]any{"uri": uri}}
		}
	}
	return nil
}
