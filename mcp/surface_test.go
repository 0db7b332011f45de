package mcp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxExportedNames bounds the public surface of package mcp: every
// exported type, function, method (interface methods included), constant
// and variable counts as one name. maxExportedFields bounds the exported
// struct fields apart: they are mostly the protocol's own members, which
// the specification, not keel, decides; the bound keeps them from
// growing unnoticed.
const (
	maxExportedNames  = 400
	maxExportedFields = 475
)

// exportedNames lists the exported identifiers of the non-test Go files in
// dir, as "Kind Name" (methods and fields as "Type.Name"). Methods and fields
// count only on exported types, since others are unreachable by name;
// MarshalJSON and UnmarshalJSON, which make the protocol types speak
// encoding/json, implement the standard library's interfaces and add no
// name a user has to learn, so they do not count.
func exportedNames(t *testing.T, dir string, tags ...string) []string {
	t.Helper()
	var names []string
	for _, d := range decls(t, dir, tags...) {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				names = append(names, "func "+d.Name.Name)
				continue
			}
			recv := receiverName(d.Recv.List[0].Type)
			if d.Name.Name == "MarshalJSON" || d.Name.Name == "UnmarshalJSON" {
				continue // encoding/json's interfaces: no name a user learns
			}
			if ast.IsExported(recv) {
				names = append(names, "method "+recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							names = append(names, d.Tok.String()+" "+id.Name)
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					names = append(names, "type "+s.Name.Name)
					names = append(names, memberNames(s.Name.Name, s.Type)...)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

// decls returns the top-level declarations of the non-test Go files in
// dir (sourceFiles), with their doc comments.
func decls(t *testing.T, dir string, tags ...string) []ast.Decl {
	t.Helper()
	fset := token.NewFileSet()
	var out []ast.Decl
	for _, n := range sourceFiles(t, dir, tags...) {
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments|parser.SkipObjectResolution)
		require.NoError(t, err)
		out = append(out, f.Decls...)
	}
	return out
}

// memberNames lists the exported fields of a struct type and the exported
// methods of an interface type.
func memberNames(typ string, x ast.Expr) []string {
	var out []string
	switch e := x.(type) {
	case *ast.StructType:
		for _, f := range e.Fields.List {
			for _, id := range f.Names {
				if id.IsExported() {
					out = append(out, "field "+typ+"."+id.Name)
				}
			}
			if len(f.Names) == 0 { // embedded: its name is the type's
				if n := receiverName(f.Type); ast.IsExported(n) {
					out = append(out, "field "+typ+"."+n)
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			for _, id := range m.Names {
				if id.IsExported() {
					out = append(out, "method "+typ+"."+id.Name)
				}
			}
		}
	}
	return out
}

// TestExportedSurface bounds the surface of both builds: the default one
// and the one with the tag keel_omit2025, which must export the same
// names (a program builds either way).
func TestExportedSurface(t *testing.T) {
	for _, tags := range [][]string{nil, {"keel_omit2025"}} {
		names := exportedNames(t, ".", tags...)
		var fields, others int
		for _, n := range names {
			if testing.Verbose() && os.Getenv("KEEL_LIST_SURFACE") != "" {
				t.Log(n)
			}
			if strings.HasPrefix(n, "field ") {
				fields++
			} else {
				others++
			}
			assert.NotContains(t, n, "Modern", "exported names say the revision, not its age")
		}
		t.Logf("package mcp with tags %q exports %d names and %d struct fields", tags, others, fields)
		assert.LessOrEqual(t, others, maxExportedNames, "package mcp with tags %q exports too many names", tags)
		assert.LessOrEqual(t, fields, maxExportedFields, "package mcp with tags %q exports too many struct fields", tags)
		if tags != nil {
			assert.Equal(t, exportedNames(t, "."), names, "the build with tags %q exports the default build's names", tags)
		}
	}
}

// TestExportedNamesCountsEveryKind runs the counter on a file with one
// name of each kind, exported and not.
func TestExportedNamesCountsEveryKind(t *testing.T) {
	dir := t.TempDir()
	src := `package p

const A, b = 1, 2
var V int
type T struct {
	F, g int
	Embedded
	*Ptr
}
type Embedded struct{}
type Ptr struct{}
type hidden struct{ H int }
type I interface{ M(); n() }
type G[X any] struct{}
func F() {}
func f() {}
func (T) M() {}
func (*G[X]) N() {}
func (hidden) O() {}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\nfunc TestX() {}\n"), 0o600))
	assert.Equal(t, []string{
		"const A", "field T.Embedded", "field T.F", "field T.Ptr", "func F",
		"method G.N", "method I.M", "method T.M",
		"type Embedded", "type G", "type I", "type Ptr", "type T", "var V",
	}, exportedNames(t, dir))
}

// TestExportedTypesAreReachable: an exported type is part of the API only
// if a user can meet it: it has exported methods (an interface a user
// implements has them), or another exported
// declaration names it (a function's or method's signature, an exported
// field of an exported type, an interface method, a constant or
// variable). One that nothing exported names is plumbing and stays
// unexported.
func TestExportedTypesAreReachable(t *testing.T) {
	assert.Equal(t, []string{"Orphan"}, unreachableTypes(t, writeSource(t, `package p
type Orphan struct{ A int }
type Used struct{}
type Level string
const L Level = "x"
type Recv struct{}
func (Recv) M() {}
type hidden struct{ O Orphan }
type Outer struct{ o Orphan }
func F(u *Used, o *Outer) {}
type Impl interface{ Do() }
`)))
	assert.Empty(t, unreachableTypes(t, "."), "exported types that no exported API takes or returns")
}

func writeSource(t *testing.T, src string) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600))
	return dir
}

// unreachableTypes lists the exported types of dir's non-test files that
// have no exported method (an interface's included) and that no other
// exported declaration names.
func unreachableTypes(t *testing.T, dir string) []string {
	t.Helper()
	types := map[string]bool{} // exported type → reachable
	named := map[string]bool{}
	mention := func(n ast.Node, self string) {
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name != self {
				named[id.Name] = true
			}
			return true
		})
	}
	for _, d := range decls(t, dir) {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv != nil {
				recv := receiverName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				named[recv] = true
			}
			mention(d.Type, "")
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							if s.Type != nil {
								mention(s.Type, "")
							}
							for _, v := range s.Values {
								mention(v, "")
							}
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					types[s.Name.Name] = true
					switch x := s.Type.(type) {
					case *ast.StructType: // the types of its exported fields
						for _, f := range x.Fields.List {
							if len(f.Names) == 0 || f.Names[0].IsExported() {
								mention(f.Type, s.Name.Name)
							}
						}
					case *ast.InterfaceType: // one a user implements
						if len(memberNames(s.Name.Name, x)) > 0 {
							named[s.Name.Name] = true
						}
						mention(x, s.Name.Name)
					default:
						mention(x, s.Name.Name)
					}
				}
			}
		}
	}
	var out []string
	for typ := range types {
		if !named[typ] {
			out = append(out, typ)
		}
	}
	sort.Strings(out)
	return out
}

// TestDocsNameNoUnexportedIdentifier: the doc comment of an exported
// declaration speaks to users, who cannot see the package's unexported
// names: it states the rule (a bound's value and what happens past it),
// never the identifier that holds it. Identifiers in camelCase (an inner
// capital) are checked: plain lower-case ones read as English words, and
// a protocol member's name (a json tag) is the wire's vocabulary.
func TestDocsNameNoUnexportedIdentifier(t *testing.T) {
	assert.Equal(t, []string{"F mentions maxItems"}, docsNamingUnexported(t, writeSource(t, `package p
// maxItems bounds F.
const maxItems = 8
// F takes at most maxItems items.
func F() {}
// G takes at most 8 items (max items).
func G() {}
`)))
	assert.Empty(t, docsNamingUnexported(t, "."))
}

func docsNamingUnexported(t *testing.T, dir string) []string {
	t.Helper()
	all := decls(t, dir)
	hidden := map[string]bool{}
	for _, d := range all {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && !d.Name.IsExported() {
				hidden[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if !id.IsExported() {
							hidden[id.Name] = true
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						hidden[s.Name.Name] = true
					}
				}
			}
		}
	}
	for name := range hidden {
		if strings.ToLower(name) == name {
			delete(hidden, name)
		}
	}
	for _, d := range all { // a protocol member's name is the wire's, not an identifier
		ast.Inspect(d, func(n ast.Node) bool {
			if fld, ok := n.(*ast.Field); ok && fld.Tag != nil {
				tag := reflect.StructTag(strings.Trim(fld.Tag.Value, "`"))
				delete(hidden, strings.Split(tag.Get("json"), ",")[0])
			}
			return true
		})
	}
	var out []string
	check := func(name string, doc *ast.CommentGroup) {
		if doc == nil {
			return
		}
		for _, w := range strings.FieldsFunc(doc.Text(), func(r rune) bool {
			return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		}) {
			if hidden[w] {
				out = append(out, name+" mentions "+w)
			}
		}
	}
	for _, d := range all {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(receiverName(d.Recv.List[0].Type))) {
				check(d.Name.Name, d.Doc)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							check(id.Name, s.Doc)
							check(id.Name, d.Doc)
						}
					}
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						check(s.Name.Name, s.Doc)
						check(s.Name.Name, d.Doc)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestPeerIsAskedOfTheRequest: what a handler asks about the peer has one
// answer, the Request's. No other exported method answers the client's
// capabilities, info or log level; ProtocolVersion is also the Session's,
// as the connection's kind (Server.Sessions), and the Client's own.
func TestPeerIsAskedOfTheRequest(t *testing.T) {
	byName := map[string][]string{}
	for _, n := range exportedNames(t, ".") {
		recvMethod, ok := strings.CutPrefix(n, "method ")
		if !ok {
			continue
		}
		recv, method, _ := strings.Cut(recvMethod, ".")
		byName[method] = append(byName[method], recv)
	}
	for _, tc := range []struct {
		question string
		types    []string
	}{
		{"ClientCapabilities", []string{"Request"}},
		{"ClientInfo", []string{"Request"}},
		{"LogLevel", []string{"Request"}},
		{"ProtocolVersion", []string{"Client", "Request", "Session"}},
	} {
		assert.Equal(t, tc.types, byName[tc.question], "the exported types with a method %s", tc.question)
	}
}
