package mcp

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevisionFilesCarryTheirBuildTag pins the file layout of the packages
// the build tag keel_omit2025 covers: a file is left out by the tag
// exactly when its name starts with rev2025_ (the 2025 rules and their
// tests), no other file's name contains rev2025_, and the files that
// stand in for them when the tag is set are the rev2025_omitted* files.
func TestRevisionFilesCarryTheirBuildTag(t *testing.T) {
	without := map[string]bool{"keel_omit2025": false}
	with := map[string]bool{"keel_omit2025": true}
	for _, dir := range []string{".", "../transport", "../transport/streamhttp", "../middleware", "../registry"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			name := filepath.Base(f)
			expr := buildConstraint(t, f)
			in := func(tags map[string]bool) bool {
				return expr == nil || expr.Eval(func(tag string) bool { return tags[tag] })
			}
			switch {
			case strings.HasPrefix(name, "rev2025_omitted"):
				assert.True(t, in(with) && !in(without), "%s stands in for the 2025 rules: only with keel_omit2025", f)
			case strings.HasPrefix(name, "rev2025_"):
				assert.True(t, in(without) && !in(with), "%s holds 2025 rules: left out by keel_omit2025", f)
			case strings.Contains(name, "rev2025_"):
				assert.Fail(t, "a file whose name says rev2025_ holds 2025 rules: it starts with rev2025_ and is left out by keel_omit2025", f)
			default:
				assert.True(t, in(without) && in(with), "%s is shared by both builds (a file only one build compiles starts with rev2025_)", f)
			}
		}
	}
}

// buildConstraint returns the //go:build expression of file f when it
// names keel_omit2025, else nil.
func buildConstraint(t *testing.T, f string) constraint.Expr {
	t.Helper()
	fh, err := os.Open(f)
	require.NoError(t, err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "package ") {
			return nil
		}
		if constraint.IsGoBuild(line) {
			if !strings.Contains(line, "keel_omit2025") {
				return nil // another constraint (GOOS, race): the same in both builds
			}
			expr, err := constraint.Parse(line)
			require.NoError(t, err, f)
			return expr
		}
	}
	require.NoError(t, sc.Err())
	return nil
}

// TestSharedClientCodeHasNo2025Methods keeps the Client's 2025 code in the
// files the build tag keel_omit2025 leaves out: no declaration of a
// shared client file (client*.go), and no method of Client in any shared
// file, names a protocol method that only the 2025 revisions have (in
// their schemas, not in 2026-07-28's; tasks/get and tasks/cancel are the
// 2026-07-28 tasks extension's too). Code that sends or answers one lives
// in a rev2025_client_* file, with a stand-in in rev2025_omitted_client.go.
func TestSharedClientCodeHasNo2025Methods(t *testing.T) {
	only := only2025Methods(t)
	require.Contains(t, only, "initialize", "the schemas were read")
	require.NotContains(t, only, "tools/call")
	names := protocolMethodConsts(t, "proto_methods.go", only)
	require.Contains(t, names, "methodPing")
	require.NotContains(t, names, "methodToolsCall")
	assert.Empty(t, client2025Refs(t, ".", names), "shared client code naming a 2025-only method")
}

// TestClient2025RefsFindsSharedCode runs the check on a package whose
// shared files hold 2025 client code, and on its rev2025_ files.
func TestClient2025RefsFindsSharedCode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("package p\n\n"+src), 0o600))
	}
	write("client_x.go", "type Client struct{}\nconst methodPing = \"ping\"\nvar pings = []string{methodPing}\nfunc (c *Client) Ping() string { return methodPing }\n")
	write("server.go", "func (c *Client) Hello() string { return methodPing }\nfunc serverPing() string { return methodPing }\n")
	write("rev2025_client_y.go", "func (c *Client) Ping2() string { return methodPing }\n")
	write("client_x_test.go", "func TestX() { _ = methodPing }\n")
	got := client2025Refs(t, dir, map[string]bool{"methodPing": true})
	assert.Equal(t, []string{
		"client_x.go: pings names methodPing",
		"client_x.go: Client.Ping names methodPing",
		"server.go: Client.Hello names methodPing",
	}, got, "a shared client file's declarations and Client's methods anywhere; not the vocabulary's own constant, other server code, rev2025_ files or tests")
}

// only2025Methods returns the protocol methods (requests and
// notifications) of the 2025 revisions' schemas that revision
// 2026-07-28's schema lacks, but for those of the tasks extension.
func only2025Methods(t *testing.T) map[string]bool {
	t.Helper()
	only := map[string]bool{}
	for _, rev := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		for m := range schemaMethods(t, rev) {
			only[m] = true
		}
	}
	for m := range schemaMethods(t, Version20260728) {
		delete(only, m)
	}
	delete(only, methodTasksGet) // the tasks extension of 2026-07-28 (ExtensionTasks)
	delete(only, methodTasksCancel)
	return only
}

// schemaMethods returns the method names the official schema of rev
// declares (the const of each definition's method property).
func schemaMethods(t *testing.T, rev string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "internal", "mcptest", "schema", rev, "schema.json"))
	require.NoError(t, err)
	var doc struct {
		Definitions map[string]struct {
			Properties struct {
				Method struct {
					Const string `json:"const"`
				} `json:"method"`
			} `json:"properties"`
		} `json:"definitions"`
		Defs map[string]struct {
			Properties struct {
				Method struct {
					Const string `json:"const"`
				} `json:"method"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(b, &doc), rev)
	out := map[string]bool{}
	for _, d := range doc.Definitions {
		if d.Properties.Method.Const != "" {
			out[d.Properties.Method.Const] = true
		}
	}
	for _, d := range doc.Defs {
		if d.Properties.Method.Const != "" {
			out[d.Properties.Method.Const] = true
		}
	}
	require.NotEmpty(t, out, rev)
	return out
}

// protocolMethodConsts returns the names of the string constants of file
// whose values are among methods.
func protocolMethodConsts(t *testing.T, file string, methods map[string]bool) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				if v, err := strconv.Unquote(lit.Value); err == nil && methods[v] {
					out[id.Name] = true
				}
			}
		}
	}
	return out
}

// client2025Refs lists, as "file: declaration names constant", where a
// shared (not rev2025_) Go file of dir names one of consts: any
// declaration of a client*.go file but the constants' own, and any method
// of Client.
func client2025Refs(t *testing.T, dir string, consts map[string]bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	slices.Sort(files)
	var out []string
	for _, path := range files {
		name := filepath.Base(path)
		if strings.HasPrefix(name, "rev2025_") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		clientFile := strings.HasPrefix(name, "client")
		for _, d := range f.Decls {
			what := ""
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && receiverName(d.Recv.List[0].Type) == "Client" {
					what = "Client." + d.Name.Name
				} else if clientFile {
					what = d.Name.Name
				}
			case *ast.GenDecl:
				if clientFile && d.Tok != token.CONST && d.Tok != token.IMPORT {
					what = declNames(d)
				}
			}
			if what == "" {
				continue
			}
			seen := map[string]bool{}
			ast.Inspect(d, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && consts[id.Name] && !seen[id.Name] {
					seen[id.Name] = true
					out = append(out, name+": "+what+" names "+id.Name)
				}
				return true
			})
		}
	}
	return out
}

// declNames returns the names a var or type declaration declares,
// joined by commas.
func declNames(d *ast.GenDecl) string {
	var names []string
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.ValueSpec:
			for _, id := range s.Names {
				names = append(names, id.Name)
			}
		case *ast.TypeSpec:
			names = append(names, s.Name.Name)
		}
	}
	return strings.Join(names, ",")
}
