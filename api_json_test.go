package keel

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corePackages are the directories of the packages a program imports from
// the core module.
var corePackages = []string{".", "mcp", "mcp/taskstoretest", "transport", "transport/streamhttp",
	"registry", "middleware", "agents", "aacp", "aacp/storetest", "apps"}

// The public API speaks standard JSON: no exported declaration or doc
// comment of a core package mentions the experimental jsontext package
// (raw JSON is a json.RawMessage from encoding/json), which is what
// `go doc -all` shows a user.
func TestPublicAPIDoesNotMentionJSONText(t *testing.T) {
	for _, dir := range corePackages {
		t.Run(dir, func(t *testing.T) {
			text := publicAPI(t, dir)
			require.NotEmpty(t, text)
			for i, line := range strings.Split(text, "\n") {
				assert.NotContains(t, line, "jsontext", "%s: line %d of the public API", dir, i+1)
			}
		})
	}
}

// TestPublicAPISeesJSONText proves the check would catch a mention: the
// rendering of a package whose exported signature uses jsontext names it.
func TestPublicAPISeesJSONText(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nimport \"github.com/go-json-experiment/json/jsontext\"\n\n" +
		"// F takes raw JSON.\nfunc F(v jsontext.Value) {}\n\nfunc g(v jsontext.Value) {}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600))
	text := publicAPI(t, dir)
	assert.Contains(t, text, "func F(v jsontext.Value)")
	assert.NotContains(t, text, "func g", "unexported declarations are not part of the API")
}

// publicAPI renders what go doc -all shows of the package in dir: the
// package comment, and every exported declaration (unexported fields and
// methods left out) with its doc comment.
func publicAPI(t *testing.T, dir string) string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			require.NoError(t, err)
			continue // not in the default build (a file of a build tag such as keel_omit2025)
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "example.com/"+dir)
	require.NoError(t, err)
	var b bytes.Buffer
	b.WriteString(pkg.Doc)
	decl := func(doc string, d ast.Decl) {
		b.WriteString(doc)
		require.NoError(t, printer.Fprint(&b, fset, d))
		b.WriteByte('\n')
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			decl(v.Doc, v.Decl)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			decl(f.Doc, f.Decl)
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	funcs(pkg.Funcs)
	for _, typ := range pkg.Types {
		decl(typ.Doc, typ.Decl)
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs)
		funcs(typ.Methods)
	}
	return b.String()
}
