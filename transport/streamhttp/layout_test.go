package streamhttp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev2025StateHasEmptyStandIns pins where the 2025 rules keep their
// state. A shared struct (Handler, httpSession, stream, envelope) holds
// what only the 2025 rules use in one field of a type named ...Rev2025,
// defined in the rev2025_* files; rev2025_omitted.go defines each such
// type as an empty struct, so that built with keel_omit2025 no shared
// struct carries any of that state. (Which build compiles which file is
// pinned for every package the tag covers by mcp's
// TestRevisionFilesCarryTheirBuildTag.)
func TestRev2025StateHasEmptyStandIns(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	real, standIns := map[string]bool{}, map[string]bool{}
	fields := map[string]bool{} // types of the shared structs' fields
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err, f)
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				st, isStruct := ts.Type.(*ast.StructType)
				switch {
				case strings.HasSuffix(ts.Name.Name, "Rev2025") && strings.HasPrefix(f, "rev2025_omitted"):
					standIns[ts.Name.Name] = true
					assert.True(t, isStruct && len(st.Fields.List) == 0, "%s: the stand-in %s is an empty struct", f, ts.Name.Name)
				case strings.HasSuffix(ts.Name.Name, "Rev2025"):
					real[ts.Name.Name] = true
					assert.True(t, strings.HasPrefix(f, "rev2025_"), "%s: %s holds 2025 state: it belongs in a rev2025_ file", f, ts.Name.Name)
				case isStruct && !strings.HasPrefix(f, "rev2025_"):
					for _, fl := range st.Fields.List {
						if id, ok := fl.Type.(*ast.Ident); ok && strings.HasSuffix(id.Name, "Rev2025") {
							fields[id.Name] = true
						}
					}
				}
			}
		}
	}
	require.NotEmpty(t, real)
	assert.Equal(t, sortedKeys(real), sortedKeys(standIns), "every type of 2025 state has an empty stand-in, and nothing else does")
	assert.Equal(t, sortedKeys(real), sortedKeys(fields), "every type of 2025 state is a field of a shared struct")
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
