package registry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

func readContents(context.Context, string) ([]mcp.ResourceContents, error) {
	return []mcp.ResourceContents{{Text: ptrTo("x")}}, nil
}

func ptrTo[T any](v T) *T { return &v }

func TestStaticResources(t *testing.T) {
	ctx := context.Background()
	r := registry.New(nil)
	require.NoError(t, r.AddTextResource(&mcp.Resource{URI: "test://b/readme", Name: "readme"}, "hello"))
	require.NoError(t, r.AddBlobResource(&mcp.Resource{URI: "test://a/logo", Name: "logo", MimeType: "image/png"}, []byte{1, 2, 3}))
	require.NoError(t, r.AddResource(&mcp.Resource{URI: "test://c/live", Name: "live", MimeType: "application/json"}, readContents))

	list, err := r.ListResources(ctx)
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, []string{"test://a/logo", "test://b/readme", "test://c/live"}, []string{list[0].URI, list[1].URI, list[2].URI}, "sorted by URI")
	assert.Equal(t, "text/plain", list[1].MimeType, "text resources default to text/plain")
	assert.Equal(t, int64(5), *list[1].Size, "size defaults to the bytes of the text")
	assert.Equal(t, int64(3), *list[0].Size)

	res, err := r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://b/readme"})
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	assert.Equal(t, "hello", *res.Contents[0].Text)
	assert.Equal(t, "text/plain", res.Contents[0].MimeType)

	res, err = r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://a/logo"})
	require.NoError(t, err)
	assert.Equal(t, "AQID", *res.Contents[0].Blob, "base64 of the raw bytes")

	res, err = r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://c/live"})
	require.NoError(t, err)
	assert.Equal(t, mcp.ResourceContents{URI: "test://c/live", MimeType: "application/json", Text: ptrTo("x")}, res.Contents[0],
		"URI and MIME type filled in from the request and the definition")

	_, err = r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://nope"})
	var rpc *mcp.Error
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, int64(mcp.CodeResourceNotFound), rpc.Code)
}

func TestResourceRegistrationErrors(t *testing.T) {
	two := 2.0
	tests := []struct {
		name string
		def  *mcp.Resource
		h    registry.ResourceHandler
		want string
	}{
		{"nil definition", nil, readContents, "nil definition"},
		{"nil handler", &mcp.Resource{URI: "test://x", Name: "x"}, nil, "nil handler"},
		{"empty URI", &mcp.Resource{Name: "x"}, readContents, "resource URI is empty"},
		{"relative URI", &mcp.Resource{URI: "x/y", Name: "x"}, readContents, "not absolute"},
		{"no name", &mcp.Resource{URI: "test://x"}, readContents, "name is empty"},
		{"bad MIME type", &mcp.Resource{URI: "test://x", Name: "x", MimeType: "text/"}, readContents, "invalid MIME type"},
		{"bad priority", &mcp.Resource{URI: "test://x", Name: "x", Annotations: &mcp.Annotations{Priority: &two}}, readContents, "priority 2"},
		{"bad audience", &mcp.Resource{URI: "test://x", Name: "x", Annotations: &mcp.Annotations{Audience: []string{"system"}}}, readContents, "audience"},
		{"bad lastModified", &mcp.Resource{URI: "test://x", Name: "x", Annotations: &mcp.Annotations{LastModified: "yesterday"}}, readContents, "lastModified"},
		{"bad _meta key", &mcp.Resource{URI: "test://x", Name: "x", Meta: mcp.Meta{"-bad": 1}}, readContents, "_meta key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := registry.New(nil).AddResource(tc.def, tc.h)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var re *registry.RegistrationError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, registry.KindResource, re.Kind)
			assert.True(t, errors.Is(err, &mcp.StructuredError{Code: mcp.ErrInvalidArgument}))
		})
	}
}

func TestResourceDuplicates(t *testing.T) {
	r := registry.New(nil)
	var changes atomic.Int32
	r.OnResourcesChange(func() { changes.Add(1) })
	def := &mcp.Resource{URI: "test://x", Name: "x"}
	require.NoError(t, r.AddTextResource(def, "a"))
	require.ErrorIs(t, r.AddTextResource(def, "b"), registry.ErrDuplicateResource, "identical definition, another content")
	err := r.AddTextResource(&mcp.Resource{URI: "test://x", Name: "other"}, "a")
	require.ErrorIs(t, err, registry.ErrDuplicateResource)
	assert.Contains(t, err.Error(), `registry: resource "test://x"`)

	tmpl := &mcp.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}
	require.NoError(t, r.AddResourceTemplate(tmpl, noopTemplate, nil))
	require.ErrorIs(t, r.AddResourceTemplate(tmpl, noopTemplate, nil), registry.ErrDuplicateResource)
	err = r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{id}", Name: "u"}, noopTemplate, nil)
	require.ErrorIs(t, err, registry.ErrDuplicateResource)
	var re *registry.RegistrationError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, registry.KindResourceTemplate, re.Kind)
	assert.Equal(t, int32(2), changes.Load(), "refused registrations report no change")

	assert.True(t, r.RemoveResource("test://x"))
	assert.False(t, r.RemoveResource("test://x"))
	assert.True(t, r.RemoveResourceTemplate("test://t/{id}"))
	assert.False(t, r.RemoveResourceTemplate("test://t/{id}"))
	assert.Equal(t, int32(4), changes.Load())
}

func noopTemplate(context.Context, string, registry.Vars) ([]mcp.ResourceContents, error) {
	return []mcp.ResourceContents{{Text: ptrTo("t")}}, nil
}

func TestTemplateRegistrationErrors(t *testing.T) {
	r := registry.New(nil)
	for _, tc := range []struct {
		def  *mcp.ResourceTemplate
		opts *registry.TemplateOptions
		want string
	}{
		{&mcp.ResourceTemplate{URITemplate: "test://{bad", Name: "t"}, nil, "invalid RFC 6570 URI template"},
		{&mcp.ResourceTemplate{URITemplate: "", Name: "t"}, nil, "URI template is empty"},
		{&mcp.ResourceTemplate{URITemplate: "test://{id}"}, nil, "name is empty"},
		{&mcp.ResourceTemplate{URITemplate: "test://{id}", Name: "t"}, &registry.TemplateOptions{Complete: map[string]registry.Completer{"nope": registry.CompleteFrom("a")}}, `completion for "nope"`},
		{&mcp.ResourceTemplate{URITemplate: "test://{id}", Name: "t"}, &registry.TemplateOptions{Complete: map[string]registry.Completer{"id": nil}}, "nil completer"},
	} {
		err := r.AddResourceTemplate(tc.def, noopTemplate, tc.opts)
		require.Error(t, err, tc.def.URITemplate)
		assert.Contains(t, err.Error(), tc.want)
	}
	require.Error(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://{id}", Name: "t"}, nil, nil))
}

func TestReadResourceTemplates(t *testing.T) {
	ctx := context.Background()
	r := registry.New(nil)
	var got registry.Vars
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://users/{id}{?fields*}", Name: "user", MimeType: "application/json"},
		func(_ context.Context, uri string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			got = vars
			if vars.Get("id") == "missing" {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return []mcp.ResourceContents{{Text: ptrTo("{}")}}, nil
		}, nil))
	require.NoError(t, r.AddTextResource(&mcp.Resource{URI: "test://users/me", Name: "me"}, "static"))
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://bad/{id}", Name: "bad"},
		func(context.Context, string, registry.Vars) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{{URI: "test://bad/x"}}, nil // neither text nor blob
		}, nil))

	res, err := r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://users/42"})
	require.NoError(t, err)
	assert.Equal(t, "42", got.Get("id"))
	assert.False(t, got.Has("fields"))
	assert.Equal(t, mcp.ResourceContents{URI: "test://users/42", MimeType: "application/json", Text: ptrTo("{}")}, res.Contents[0])

	res, err = r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://users/me"})
	require.NoError(t, err)
	assert.Equal(t, "static", *res.Contents[0].Text, "a static resource wins over a template")

	_, err = r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://users/missing"})
	assert.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeResourceNotFound})

	_, err = r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://bad/x"})
	assert.ErrorIs(t, err, &mcp.StructuredError{Code: mcp.ErrInternal})

	templates, err := r.ListResourceTemplates(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"test://bad/{id}", "test://users/{id}{?fields*}"}, []string{templates[0].URITemplate, templates[1].URITemplate})
}

func TestNotifyResourceUpdated(t *testing.T) {
	r := registry.New(nil)
	var got []string
	r.OnResourceUpdated(func(uri string) { got = append(got, uri) })
	r.NotifyResourceUpdated("test://a")
	r.NotifyResourceUpdated("test://b")
	assert.Equal(t, []string{"test://a", "test://b"}, got)
}

func TestExpandTemplate(t *testing.T) {
	uri, err := registry.ExpandTemplate("test://tree{/path*}{?q}", registry.Vars{"path": {"a", "b c"}, "q": {"é€😀"}})
	require.NoError(t, err)
	assert.Equal(t, "test://tree/a/b%20c?q=%C3%A9%E2%82%AC%F0%9F%98%80", uri, "UTF-8, then percent-encoded (RFC 6570 §1.6)")
	uri, err = registry.ExpandTemplate("file:///{+path}", registry.Vars{"path": {"dir/ü.txt"}})
	require.NoError(t, err)
	assert.Equal(t, "file:///dir/%C3%BC.txt", uri)

	// Expansion and matching are inverses.
	r := registry.New(nil)
	var got registry.Vars
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://tree{/path*}{?q}", Name: "t"},
		func(_ context.Context, _ string, vars registry.Vars) ([]mcp.ResourceContents, error) {
			got = vars
			return []mcp.ResourceContents{{Text: ptrTo("")}}, nil
		}, nil))
	_, err = r.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://tree/a/b%20c?q=%C3%A9%E2%82%AC%F0%9F%98%80"})
	require.NoError(t, err)
	assert.Equal(t, registry.Vars{"path": {"a", "b c"}, "q": {"é€😀"}}, got)
	_, err = registry.ExpandTemplate("test://{", nil)
	assert.Error(t, err)
}

// TestCatalogConcurrentReadsAndChanges runs reads of every kind while
// resources, templates and prompts come and go (for -race).
func TestCatalogConcurrentReadsAndChanges(t *testing.T) {
	ctx := context.Background()
	r := registry.New(nil)
	require.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, noopTemplate, nil))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				uri := fmt.Sprintf("test://w%d/%d", w, i)
				assert.NoError(t, r.AddTextResource(&mcp.Resource{URI: uri, Name: "x"}, "x"))
				assert.NoError(t, r.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uri + "/{id}", Name: "x"}, noopTemplate, nil))
				assert.NoError(t, r.AddPrompt(&mcp.Prompt{Name: uri}, promptOK, nil))
				_, err := r.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://t/1"})
				assert.NoError(t, err)
				_, err = r.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri + "/7"})
				assert.NoError(t, err)
				_, err = r.GetPrompt(ctx, &mcp.GetPromptParams{Name: uri})
				assert.NoError(t, err)
				_, _ = r.ListResources(ctx)
				_, _ = r.ListPrompts(ctx)
				r.RemoveResource(uri)
			}
		}()
	}
	wg.Wait()
	list, _ := r.ListResources(ctx)
	assert.Empty(t, list)
	prompts, _ := r.ListPrompts(ctx)
	assert.Len(t, prompts, 200)
}

func promptOK(context.Context, map[string]string) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{mcp.UserMessage(mcp.Text("ok"))}}, nil
}
