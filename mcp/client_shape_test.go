package mcp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientTypesMethodCount checks that no type declared in the client's
// files (client*.go) has more than 40 methods, counting them in every file
// of the package: a type that would grow past it is cut by concern instead.
func TestClientTypesMethodCount(t *testing.T) {
	const maxMethods = 40
	// receiver returns the name of a receiver type (T for *T, T[P], *T[P]).
	receiver := func(e ast.Expr) string {
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
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	methods := map[string]int{}
	clientTypes := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					methods[receiver(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				if d.Tok != token.TYPE || !strings.HasPrefix(name, "client") {
					continue
				}
				for _, s := range d.Specs {
					clientTypes[s.(*ast.TypeSpec).Name.Name] = true
				}
			}
		}
	}
	require.True(t, clientTypes["Client"], "the Client type is declared in a client*.go file")
	require.Positive(t, methods["Client"])
	for typ := range clientTypes {
		assert.LessOrEqual(t, methods[typ], maxMethods, "methods of %s", typ)
	}
}
