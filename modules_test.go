package keel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// coreImportPaths are the import paths of the packages of the core module a program may import
// without pulling in a database driver or OpenTelemetry.
var coreImportPaths = []string{
	"github.com/keelmcp/keel",
	"github.com/keelmcp/keel/mcp",
	"github.com/keelmcp/keel/transport",
	"github.com/keelmcp/keel/transport/streamhttp",
	"github.com/keelmcp/keel/registry",
	"github.com/keelmcp/keel/middleware",
	"github.com/keelmcp/keel/agents",
	"github.com/keelmcp/keel/aacp",
	"github.com/keelmcp/keel/aacp/storetest",
	"github.com/keelmcp/keel/apps",
}

// heavyModules are module path fragments that must stay out of the core
// module's graph: the database drivers live in aacp/sqlstore and postgres,
// OpenTelemetry in otel, each a module of its own.
var heavyModules = []string{"pgx", "sqlite", "modernc.org", "opentelemetry"}

// A fresh program that imports every core package has neither a database
// driver nor OpenTelemetry in its module graph (`go list -m all`): the
// durable stores and the instrumentation are modules of their own.
func TestCoreModuleGraphHasNoDrivers(t *testing.T) {
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range coreImportPaths {
		src.WriteString("\t_ \"" + p + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	dir := tempModule(t, "example.com/coreonly", map[string]string{"main.go": src.String()})

	goCommand(t, dir, "mod", "tidy")
	out := goCommand(t, dir, "list", "-m", "all")
	var heavy []string
	for _, m := range strings.Split(strings.TrimSpace(out), "\n") {
		for _, h := range heavyModules {
			if strings.Contains(m, h) {
				heavy = append(heavy, m)
			}
		}
	}
	require.Empty(t, heavy, "modules in the graph of a program importing only the core packages:\n%s", out)
	require.Contains(t, out, "github.com/keelmcp/keel v0.0.0 => ", "the program must build against this checkout")
	goCommand(t, dir, "build", "-o", os.DevNull, ".")
}

// tempModule writes files into a fresh module directory whose go.mod
// requires github.com/keelmcp/keel (and the extra modules given as
// "path=dir" pairs, dir relative to the checkout) from this checkout through
// replace directives. It returns the directory.
func tempModule(t *testing.T, module string, files map[string]string, extra ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a throwaway module with the go command; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	mod := "module " + module + "\n\ngo 1.25.0\n\nrequire github.com/keelmcp/keel v0.0.0\n\nreplace github.com/keelmcp/keel => " + root + "\n"
	for _, e := range extra {
		path, rel, ok := strings.Cut(e, "=")
		require.True(t, ok, "extra module %q is not path=dir", e)
		mod += "\nrequire " + path + " v0.0.0\n\nreplace " + path + " => " + filepath.Join(root, rel) + "\n"
	}
	files["go.mod"] = mod
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	return dir
}

// goCommand runs the go command in dir, outside any workspace, and returns
// its standard output; it fails the test with the command's output when
// the command fails.
func goCommand(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go %s in %s:\n%s%s", strings.Join(args, " "), dir, out, stderr.String())
	return string(out)
}
