package mcp

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTypesMethodCount checks that no type of the package has more than 40
// methods, counting them in every file: a type that would grow past it is
// cut by concern instead.
func TestTypesMethodCount(t *testing.T) {
	const maxMethods = 40
	files := sourceFiles(t, ".")
	fset := token.NewFileSet()
	methods := map[string]int{}
	types := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					methods[receiverName(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				if d.Tok != token.TYPE {
					continue
				}
				for _, s := range d.Specs {
					types[s.(*ast.TypeSpec).Name.Name] = true
				}
			}
		}
	}
	require.True(t, types["Client"] && types["Session"])
	require.Positive(t, methods["Client"])
	require.Positive(t, methods["Session"])
	for typ := range types {
		assert.LessOrEqual(t, methods[typ], maxMethods, "methods of %s", typ)
	}
}

// receiverName returns the name of a receiver type (T for *T, T[P],
// *T[P]), "" for anything else.
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestRecoverPlaces checks that the package recovers panics in few places
// (guard is the one for user code): a new recover is a second owner of
// the same concern.
func TestRecoverPlaces(t *testing.T) {
	files := sourceFiles(t, ".")
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(node ast.Node) bool {
			if c, ok := node.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "recover" {
					n++
				}
			}
			return true
		})
	}
	assert.Positive(t, n)
	assert.LessOrEqual(t, n, 3, "recover() calls in package mcp")
}

// sourceFiles returns the names of the non-test Go files of dir that the
// build with tags compiles (none: the default build; a tag such as
// keel_omit2025 swaps some files for others).
func sourceFiles(t *testing.T, dir string, tags ...string) []string {
	t.Helper()
	bc := build.Default
	bc.BuildTags = tags
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		ok, err := bc.MatchFile(dir, n)
		require.NoError(t, err)
		if ok {
			files = append(files, n)
		}
	}
	return files
}
