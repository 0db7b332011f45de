package registry

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yosida95/uritemplate/v3"

	"github.com/keelmcp/keel/mcp"
)

// Vars are the variables a URI template extracted from a URI, by name.
// Most variables have one value; list-valued ones ({/path*} matching
// "/a/b") have several, and associative ones key, value, key, value...
// Values are percent-decoded.
type Vars map[string][]string

// Get returns the first value of the variable name, or "" when the URI did
// not set it.
func (v Vars) Get(name string) string {
	if vs := v[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// Has reports whether the URI set the variable name.
func (v Vars) Has(name string) bool {
	_, ok := v[name]
	return ok
}

// TemplateHandler reads a resource whose URI matched a template: vars holds
// the template's variables extracted from uri. It returns the contents of
// the resource (or of the resources below it); members left empty are
// filled in: URI with uri, MimeType with the template's. Return
// mcp.ResourceNotFoundError(uri) (or an error wrapping fs.ErrNotExist) when
// no such resource exists.
type TemplateHandler func(ctx context.Context, uri string, vars Vars) ([]mcp.ResourceContents, error)

// TemplateOptions are extra settings of a resource template (nil = none).
type TemplateOptions struct {
	// Complete offers completions of the template's variables
	// (completion/complete with a ref/resource reference), by variable
	// name. Each name must be a variable of the template.
	Complete map[string]Completer
}

// ExpandTemplate expands an RFC 6570 URI template (levels 1 to 4) with
// vars: a variable with one value is a string, one with several a list.
// It is the inverse of matching, handy for building the URIs of resources
// a template serves (in resource links, for example).
func ExpandTemplate(uriTemplate string, vars Vars) (string, error) {
	t, err := uritemplate.New(uriTemplate)
	if err != nil {
		return "", err
	}
	vals := uritemplate.Values{}
	for name, vs := range vars {
		bs := make([]string, len(vs))
		for i, v := range vs {
			bs[i] = byteRunes(v)
		}
		if len(bs) == 1 {
			vals.Set(name, uritemplate.String(bs[0]))
		} else {
			vals.Set(name, uritemplate.List(bs...))
		}
	}
	return t.Expand(vals)
}

// byteRunes returns s with each byte of a non-ASCII character turned into
// the rune of the same number. The library percent-encodes a rune by the
// bytes of its code point rather than of its UTF-8 encoding ("é" would
// become %E9, not %C3%A9); runes 0x80-0xFF are always percent-encoded, so
// handing it one rune per UTF-8 byte yields the RFC 6570 encoding.
func byteRunes(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return s
	}
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

// resourceTemplate is a registered template, compiled once.
type resourceTemplate struct {
	def      *mcp.ResourceTemplate
	tmpl     *uritemplate.Template
	prefix   string // the literal text before the first expression
	literals int    // literal bytes in the whole template: more is more specific
	vars     []string
	handler  TemplateHandler
	complete map[string]Completer
}

// compileTemplate parses the template and compiles its matcher now, so that
// reads never parse or compile anything.
func compileTemplate(raw string) (*uritemplate.Template, error) {
	t, err := uritemplate.New(raw)
	if err != nil {
		return nil, err
	}
	t.Match("") // compiles and caches the matching program
	return t, nil
}

// literalStats returns the literal prefix of a template and the number of
// its literal bytes.
func literalStats(raw string) (prefix string, literals int) {
	prefix = raw
	if i := strings.IndexByte(raw, '{'); i >= 0 {
		prefix = raw[:i]
	}
	inExpr := false
	for i := 0; i < len(raw); i++ {
		switch {
		case raw[i] == '{':
			inExpr = true
		case raw[i] == '}':
			inExpr = false
		case !inExpr:
			literals++
		}
	}
	return prefix, literals
}

// templateIndex finds the templates that may match a URI without trying
// the others: a radix tree of the templates' literal prefixes. A URI can
// only match a template whose literal prefix it starts with, so a read
// walks the tree along the URI (time proportional to its length) and tries
// only the templates met on the way, longest prefix first.
type templateIndex struct {
	root indexNode
}

type indexNode struct {
	edge      string // label of the edge into this node
	children  map[byte]*indexNode
	templates []*resourceTemplate // those whose prefix ends here, most specific first
}

func newTemplateIndex(ts []*resourceTemplate) *templateIndex {
	ix := &templateIndex{}
	for _, t := range ts {
		ix.insert(t)
	}
	ix.root.sort()
	return ix
}

func (ix *templateIndex) insert(t *resourceTemplate) {
	n, key := &ix.root, t.prefix
	for key != "" {
		c := n.children[key[0]]
		if c == nil {
			if n.children == nil {
				n.children = map[byte]*indexNode{}
			}
			c = &indexNode{edge: key}
			n.children[key[0]] = c
			n, key = c, ""
			break
		}
		l := commonPrefix(key, c.edge)
		if l < len(c.edge) { // split the edge
			mid := &indexNode{edge: c.edge[:l], children: map[byte]*indexNode{c.edge[l]: c}}
			c.edge = c.edge[l:]
			n.children[key[0]] = mid
			c = mid
		}
		n, key = c, key[l:]
	}
	n.templates = append(n.templates, t)
}

func (n *indexNode) sort() {
	slices.SortFunc(n.templates, func(a, b *resourceTemplate) int {
		if c := cmp.Compare(b.literals, a.literals); c != 0 {
			return c
		}
		return strings.Compare(a.def.URITemplate, b.def.URITemplate)
	})
	for _, c := range n.children {
		c.sort()
	}
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// match returns the template uri matches and its variables, trying only
// the candidates whose literal prefix uri starts with (longest prefix
// first, then most literal text); tried counts the match attempts.
func (ix *templateIndex) match(uri string) (t *resourceTemplate, vars Vars, tried int) {
	var path [16]*indexNode
	nodes := append(path[:0], &ix.root)
	n, rest := &ix.root, uri
	for rest != "" {
		c := n.children[rest[0]]
		if c == nil || !strings.HasPrefix(rest, c.edge) {
			break
		}
		n, rest = c, rest[len(c.edge):]
		nodes = append(nodes, n)
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		for _, t := range nodes[i].templates {
			tried++
			if vals := t.tmpl.Match(uri); vals != nil {
				vars := make(Vars, len(vals))
				for name, v := range vals {
					vars[name] = v.V
				}
				return t, vars, tried
			}
		}
	}
	return nil, nil, tried
}
