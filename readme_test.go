package keel

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snippet is a ```go block of the README: its text and the README line
// its first line is on.
type snippet struct {
	line int
	text string
}

// readmeSnippets returns the ```go blocks of the markdown file path.
func readmeSnippets(t *testing.T, path string) []snippet {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []snippet
	var cur *snippet
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(l) == "```go":
			cur = &snippet{line: n + 1}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	require.NoError(t, sc.Err())
	if cur != nil {
		t.Fatalf("%s: the ```go block that starts on line %d never ends", path, cur.line)
	}
	return out
}

// snippetImports are the packages a fragment may use without importing
// them, by the name it uses.
var snippetImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "log": "log", "slog": "log/slog",
	"net": "net", "http": "net/http", "exec": "os/exec", "os": "os", "time": "time",
	"embed": "embed", "testing": "testing", "json": "encoding/json",
	"require":    "github.com/stretchr/testify/require",
	"keel":       "github.com/keelmcp/keel",
	"mcp":        "github.com/keelmcp/keel/mcp",
	"middleware": "github.com/keelmcp/keel/middleware",
	"registry":   "github.com/keelmcp/keel/registry",
	"transport":  "github.com/keelmcp/keel/transport",
	"streamhttp": "github.com/keelmcp/keel/transport/streamhttp",
	"apps":       "github.com/keelmcp/keel/apps",
	"agents":     "github.com/keelmcp/keel/agents",
	"aacp":       "github.com/keelmcp/keel/aacp",
	"keelotel":   "github.com/keelmcp/keel/otel",
	"postgres":   "github.com/keelmcp/keel/postgres",
}

// snippetContext declares, for fragments, what the README leaves to the
// reader's program: the context and test at hand, the registry and types
// of the Hello world, the handlers and values a snippet names. Each is
// added to a fragment only when the fragment uses it without declaring
// it, with the imports it needs.
var snippetContext = map[string]struct{ decl, imports string }{
	"ctx":         {"var ctx = context.Background()", "context"},
	"t":           {"var t *testing.T", "testing"},
	"reg":         {"var reg = registry.New(nil)", "registry"},
	"url":         {`var url = "http://127.0.0.1:8080/mcp"`, ""},
	"dsn":         {`var dsn = "postgres://keel@127.0.0.1/keel"`, ""},
	"GreetIn":     {"type GreetIn struct{ Name string `json:\"name\"` }", ""},
	"GreetOut":    {"type GreetOut struct{ Greeting string `json:\"greeting\"` }", ""},
	"newRegistry": {"func newRegistry() *registry.Registry { return registry.New(nil) }", "registry"},
	"BookIn":      {"type BookIn struct{ Flight string `json:\"flight\"` }", ""},
	"BookOut":     {"type BookOut struct{ Booked string `json:\"booked\"` }", ""},
	"schema":      {"var schema = []byte(`{\"type\":\"object\"}`)", ""},
	"inventory":   {"func inventory(context.Context, struct{}) (string, error) { return \"\", nil }", "context"},
	"restock":     {"func restock(context.Context, struct{ SKU string `json:\"sku\"` }) (string, error) { return \"\", nil }", "context"},
}

var embedPattern = regexp.MustCompile(`(?m)^//go:embed (.+)$`)

// Every ```go block of the README compiles (and passes go vet) against this
// checkout. A block that starts with a package clause is a program as it
// stands; a block of declarations is a file of its own; any other block is
// statements, run as the body of a function. A fragment gets the imports
// it uses (the import block it shows comes first) and the names in
// snippetContext it uses without declaring; a variable it declares at the
// top level and never uses is taken as used (the reader's program would go
// on to use it). A block that declares a TestXxx function is the test file
// of the program shown before it. Errors name README.md and the line.
func TestReadmeSnippetsCompile(t *testing.T) {
	snippets := readmeSnippets(t, "README.md")
	require.NotEmpty(t, snippets)
	files := map[string]string{}
	lastProgram := ""
	for i, s := range snippets {
		dir := fmt.Sprintf("snippet%02d_line%d", i, s.line)
		if strings.HasPrefix(strings.TrimSpace(s.text), "package ") {
			files[filepath.Join(dir, "main.go")] = "//line README.md:" + strconv.Itoa(s.line) + "\n" + s.text
			lastProgram = dir
			for _, m := range embedPattern.FindAllStringSubmatch(s.text, -1) {
				files[filepath.Join(dir, m[1])] = "embedded\n"
			}
			continue
		}
		src, isTest, err := wrapFragment(s)
		if err != nil {
			t.Errorf("README.md:%d: the ```go block does not parse: %v", s.line, err)
			continue
		}
		name := filepath.Join(dir, "snippet.go")
		if isTest && lastProgram != "" {
			name = filepath.Join(lastProgram, fmt.Sprintf("readme_line%d_test.go", s.line))
		}
		files[name] = src
		for _, m := range embedPattern.FindAllStringSubmatch(s.text, -1) {
			files[filepath.Join(filepath.Dir(name), m[1])] = "embedded\n"
		}
	}

	dir := snippetModule(t, files)
	goCommand(t, dir, "vet", "./...")
}

// wrapFragment makes a file of a block without a package clause (see
// TestReadmeSnippetsCompile), with a //line directive so that compiler
// errors name the README's lines; isTest reports a block that declares a
// TestXxx function.
func wrapFragment(s snippet) (src string, isTest bool, err error) {
	body := s.text
	line := s.line
	var imports []string
	// An import block the snippet shows comes first.
	if rest, ok := strings.CutPrefix(body, "import ("); ok {
		end := strings.Index(rest, "\n)")
		if end < 0 {
			return "", false, fmt.Errorf("unterminated import block")
		}
		for _, l := range strings.Split(rest[:end], "\n") {
			if l = strings.TrimSpace(l); l != "" {
				imports = append(imports, l)
			}
		}
		consumed := body[:len("import (")+end+len("\n)")]
		body = strings.TrimLeft(body[len(consumed):], "\n")
		line += strings.Count(s.text[:len(s.text)-len(body)], "\n")
	}

	fset := token.NewFileSet()
	asFile := "package snippet\n" + body
	f, ferr := parser.ParseFile(fset, "", asFile, parser.SkipObjectResolution)
	stmts := ferr != nil
	if stmts {
		f, err = parser.ParseFile(fset, "", "package snippet\nfunc _() {\n"+body+"\n}\n", 0)
		if err != nil {
			return "", false, err
		}
	} else {
		f, err = parser.ParseFile(fset, "", asFile, 0) // resolve identifiers
		if err != nil {
			return "", false, err
		}
	}
	pkg := "snippet"
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			switch {
			case fd.Name.Name == "main":
				pkg = "main"
			case strings.HasPrefix(fd.Name.Name, "Test"):
				isTest = true
			}
		}
	}
	if isTest {
		pkg = "main"
	}

	// What the fragment uses without declaring: imports and context.
	have := map[string]bool{}
	for _, imp := range imports {
		fields := strings.Fields(imp)
		path, _ := strconv.Unquote(fields[len(fields)-1])
		name := filepath.Base(path)
		if len(fields) == 2 {
			name = fields[0]
		}
		have[name] = true
	}
	var decls []string
	unresolved := map[string]bool{}
	for _, id := range f.Unresolved {
		unresolved[id.Name] = true
	}
	names := make([]string, 0, len(unresolved))
	for n := range unresolved {
		names = append(names, n)
	}
	slices.Sort(names)
	addImport := func(name string) {
		if p, ok := snippetImports[name]; ok && !have[name] {
			have[name] = true
			imports = append(imports, name+" "+strconv.Quote(p))
		}
	}
	for _, n := range names {
		if c, ok := snippetContext[n]; ok && !isTest {
			decls = append(decls, c.decl)
			for _, imp := range strings.Fields(c.imports) {
				addImport(imp)
			}
			continue
		}
		addImport(n)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	if len(imports) > 0 {
		b.WriteString("import (\n")
		for _, imp := range imports {
			b.WriteString("\t" + imp + "\n")
		}
		b.WriteString(")\n\n")
	}
	for _, d := range decls {
		b.WriteString(d + "\n")
	}
	if stmts {
		b.WriteString("\nfunc _() {\n")
	}
	fmt.Fprintf(&b, "//line README.md:%d\n", line)
	b.WriteString(body)
	if stmts {
		// Variables declared at the top level count as used.
		fd := f.Decls[len(f.Decls)-1].(*ast.FuncDecl)
		for _, st := range fd.Body.List {
			for _, n := range declaredNames(st) {
				b.WriteString("\t_ = " + n + "\n")
			}
		}
		b.WriteString("}\n")
	}
	return b.String(), isTest, nil
}

// declaredNames returns the variables statement st declares.
func declaredNames(st ast.Stmt) []string {
	var out []string
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok == token.DEFINE {
			for _, e := range st.Lhs {
				if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
					out = append(out, id.Name)
				}
			}
		}
	case *ast.DeclStmt:
		if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
			for _, sp := range gd.Specs {
				for _, id := range sp.(*ast.ValueSpec).Names {
					if id.Name != "_" {
						out = append(out, id.Name)
					}
				}
			}
		}
	}
	return out
}

// snippetModule writes files into a module that builds against this
// checkout with the requirements of examples/everything (the module that
// has keel, the otel and postgres modules, the OpenTelemetry SDK and
// exporters and testify), so that it needs no module the repository does not already
// pin.
func snippetModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := tempModule(t, "example.com/readme", files)
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join("examples", "everything", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	goCommand(t, dir, "mod", "edit", "-module=example.com/readme",
		"-replace=github.com/keelmcp/keel="+root,
		"-replace=github.com/keelmcp/keel/otel="+filepath.Join(root, "otel"),
		"-replace=github.com/keelmcp/keel/postgres="+filepath.Join(root, "postgres"),
		"-replace=github.com/keelmcp/keel/internal/pgtest="+filepath.Join(root, "internal", "pgtest"))
	return dir
}

// The snippet check itself: a fragment of statements gets the context it
// uses and its unused variables, a block of declarations stays a file, a
// test block is marked, and a compile error points at the README line.
func TestWrapFragment(t *testing.T) {
	src, isTest, err := wrapFragment(snippet{line: 40, text: "srv := mcp.NewServer(nil)\nerr := srv.Run(ctx, nil)\n"})
	require.NoError(t, err)
	assert.False(t, isTest)
	assert.Contains(t, src, "var ctx = context.Background()")
	assert.Contains(t, src, `mcp "github.com/keelmcp/keel/mcp"`)
	assert.Contains(t, src, "//line README.md:40\n")
	assert.Contains(t, src, "_ = srv\n\t_ = err\n")
	assert.NotContains(t, src, "var srv")

	src, isTest, err = wrapFragment(snippet{line: 7, text: "func TestX(t *testing.T) {\n\trequire.True(t, true)\n}\n"})
	require.NoError(t, err)
	assert.True(t, isTest)
	assert.NotContains(t, src, "var t *testing.T", "a test's t is its parameter")
	assert.Contains(t, src, "package main")

	src, _, err = wrapFragment(snippet{line: 3, text: "import (\n\t\"strings\"\n)\n\nx := strings.ToUpper(\"a\")\n"})
	require.NoError(t, err)
	assert.Contains(t, src, "//line README.md:7\n", "the line directive skips the import block")
	assert.Equal(t, 1, strings.Count(src, `"strings"`))

	_, _, err = wrapFragment(snippet{line: 1, text: "func f() {\n\t...\n}\n"})
	assert.Error(t, err, "pseudo-code is no Go")
}
