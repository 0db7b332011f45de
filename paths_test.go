package keel

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No test reaches outside the repository by an absolute path: a test that
// names an existing file or directory by an absolute path depends on where
// the checkout lives. Shared files are found relative to the repository
// root instead. The kernel's files (/dev, /proc) are allowed; a string
// that names nothing on this machine (a fake path in a redaction test) is
// not a reach.
func TestTestsUseNoAbsolutePaths(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !filepath.IsAbs(s) || s == "/" || strings.HasPrefix(s, "/dev/") || strings.HasPrefix(s, "/proc/") {
				return true
			}
			if _, err := os.Stat(s); err == nil {
				found = append(found, fset.Position(lit.Pos()).String()+": "+s)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, found, "tests must find files relative to the repository root")
}
