package registry

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

func noopTemplate(context.Context, string, Vars) ([]mcp.ResourceContents, error) { return nil, nil }

// TestTemplateMatching is a table of RFC 6570 templates (every operator of
// levels 1 to 4) and URIs, with the variables a read hands the handler.
func TestTemplateMatching(t *testing.T) {
	tests := []struct {
		template, uri string
		want          Vars // nil: no match
	}{
		{"test://users/{id}", "test://users/42", Vars{"id": {"42"}}},
		{"test://users/{id}", "test://users/j%C3%B6rg", Vars{"id": {"jörg"}}},
		{"test://users/{id}", "test://users/a/b", nil}, // simple expansion stops at "/"
		{"test://users/{id}", "test://other/42", nil},
		{"test://users/{id}/posts/{post}", "test://users/7/posts/9", Vars{"id": {"7"}, "post": {"9"}}},
		{"test://x/{a,b}", "test://x/1,2", Vars{"a": {"1"}, "b": {"2"}}},
		{"file:///{+path}", "file:///a/b/c.txt", Vars{"path": {"a/b/c.txt"}}},    // reserved expansion
		{"test://doc{#section}", "test://doc#intro", Vars{"section": {"intro"}}}, // fragment
		{"test://x/file{.ext}", "test://x/file.txt", Vars{"ext": {"txt"}}},       // label
		{"test://tree{/path*}", "test://tree/a/b/c", Vars{"path": {"a", "b", "c"}}},
		{"test://tree{/path*}", "test://tree/a", Vars{"path": {"a"}}},
		{"test://m{;v}", "test://m;v=1", Vars{"v": {"1"}}},                                // path-style parameters
		{"test://s{?q,lang}", "test://s?q=go&lang=en", Vars{"q": {"go"}, "lang": {"en"}}}, // query
		{"test://s{?q,lang}", "test://s?q=go", Vars{"q": {"go"}}},                         // unset variable absent
		{"test://s{?q,lang}", "test://s", Vars{}},                                         // no variables
		{"test://s?fixed=1{&q}", "test://s?fixed=1&q=x", Vars{"q": {"x"}}},                // query continuation
		{"test://s{?q}", "test://s?q=a%20b", Vars{"q": {"a b"}}},                          // percent-decoded
		{"test://{host}/y", "test://example.com/y", Vars{"host": {"example.com"}}},        // variable in the authority
		{"test://fixed/path", "test://fixed/path", Vars{}},                                // no expression at all
		{"test://fixed/path", "test://fixed/path/more", nil},
	}
	for _, tc := range tests {
		t.Run(tc.template+" "+tc.uri, func(t *testing.T) {
			r := New(nil)
			require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tc.template, Name: "t"}, noopTemplate, nil))
			got, vars, tried := r.res.load().index.match(tc.uri)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, 1, tried)
			assert.Equal(t, tc.want, vars)
		})
	}
}

// TestTemplateIndexTriesOnlyCandidates registers 1000 templates and checks
// that a read tries only the templates whose literal prefix the URI starts
// with, not all of them.
func TestTemplateIndexTriesOnlyCandidates(t *testing.T) {
	r := New(nil)
	for i := range 1000 {
		tmpl := fmt.Sprintf("svc%d://items/{id}", i)
		require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl, Name: "t"}, noopTemplate, nil))
	}
	// Templates sharing a prefix, and a catch-all without literal prefix.
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "svc7://items/{id}/detail", Name: "d"}, noopTemplate, nil))
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "{+any}", Name: "any"}, noopTemplate, nil))
	ix := r.res.load().index

	got, vars, tried := ix.match("svc500://items/42")
	require.NotNil(t, got)
	assert.Equal(t, "svc500://items/{id}", got.def.URITemplate)
	assert.Equal(t, "42", vars.Get("id"))
	assert.Equal(t, 1, tried, "only the template with the matching literal prefix is tried")

	got, _, tried = ix.match("svc7://items/3/detail")
	require.NotNil(t, got)
	assert.Equal(t, "svc7://items/{id}/detail", got.def.URITemplate, "the more specific template wins")
	assert.Equal(t, 1, tried)

	got, _, tried = ix.match("svc7://items/3")
	require.NotNil(t, got)
	assert.Equal(t, "svc7://items/{id}", got.def.URITemplate)
	assert.Equal(t, 2, tried, "the longer template with the same prefix is tried first")

	got, vars, tried = ix.match("unknown://x")
	require.NotNil(t, got)
	assert.Equal(t, "{+any}", got.def.URITemplate, "the catch-all, whose prefix is empty, is the only candidate")
	assert.Equal(t, "unknown://x", vars.Get("any"))
	assert.Equal(t, 1, tried)

	require.True(t, r.RemoveResourceTemplate("{+any}"))
	got, _, tried = r.res.load().index.match("unknown://x")
	assert.Nil(t, got)
	assert.Equal(t, 0, tried, "no template has a prefix of this URI: nothing is tried")
}

func TestTemplateIndexSplitsSharedPrefixes(t *testing.T) {
	ts := []string{"a://x/{v}", "a://xy/{v}", "a://{v}", "a://x/y/{v}", "b://{v}", "a://x/{v}/z"}
	r := New(nil)
	for _, s := range ts {
		require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: s, Name: "t"}, noopTemplate, nil))
	}
	ix := r.res.load().index
	for uri, want := range map[string]string{
		"a://x/1":   "a://x/{v}",
		"a://xy/1":  "a://xy/{v}",
		"a://q":     "a://{v}",
		"a://x/y/1": "a://x/y/{v}",
		"a://x/1/z": "a://x/{v}/z",
		"b://1":     "b://{v}",
	} {
		got, _, _ := ix.match(uri)
		if assert.NotNil(t, got, uri) {
			assert.Equal(t, want, got.def.URITemplate, uri)
		}
	}
}

func BenchmarkReadTemplate1000(b *testing.B) {
	r := New(nil)
	for i := range 1000 {
		tmpl := fmt.Sprintf("svc%d://items/{id}", i)
		if err := r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl, Name: "t"}, func(_ context.Context, uri string, _ Vars) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents(uri, "", "x")}, nil
		}, nil); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	p := &mcp.ReadResourceParams{URI: "svc999://items/42"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadResource(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
