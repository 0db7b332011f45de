package apps_test

import (
	"context"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/apps"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

func TestValidateDomain(t *testing.T) {
	good := []string{
		"https://api.example.com", "https://*.example.com", "wss://rt.example.com:8443",
		"http://localhost:3000", "http://127.0.0.1", "https://[::1]:443", "https://example.com/",
		"HTTPS://Example.COM", "https://example.com:*",
	}
	for _, d := range good {
		assert.NoError(t, apps.ValidateDomain(d), d)
	}
	bad := []string{
		"", "example.com", "ftp://example.com", "javascript://x", "https://", "https://example.com/path",
		"https://example.com?q", "https://example.com#f", "https://user@example.com",
		"https://example.com; script-src *", "https://a.com https://b.com", "https://ex'ample.com",
		"https://a.*.com", "https://*", "https://-a.com", "https://a..com", "https://example.com:0",
		"https://example.com:70000", "https://example.com:", "https://[::1", "https://[1.2.3.4]",
		"https://ex_ample.com", "https://exämple.com", "https://a.com,https://b.com",
		"https://" + strings.Repeat("a", 64) + ".com", "https://" + strings.Repeat("a.", 600) + "com",
	}
	for _, d := range bad {
		err := apps.ValidateDomain(d)
		assert.ErrorIs(t, err, apps.ErrInvalidDomain, "%q", d)
	}
}

func TestToolMetaValidate(t *testing.T) {
	tests := []struct {
		name string
		m    apps.ToolMeta
		ok   bool
	}{
		{"view and default visibility", apps.ToolMeta{ResourceURI: "ui://table/view.html"}, true},
		{"app only, no view", apps.ToolMeta{Visibility: []apps.Visibility{apps.VisibleToApp}}, true},
		{"both", apps.ToolMeta{ResourceURI: "ui://x", Visibility: []apps.Visibility{apps.VisibleToModel, apps.VisibleToApp}}, true},
		{"not ui scheme", apps.ToolMeta{ResourceURI: "https://example.com/view.html"}, false},
		{"bare scheme", apps.ToolMeta{ResourceURI: "ui://"}, false},
		{"unknown audience", apps.ToolMeta{Visibility: []apps.Visibility{"user"}}, false},
		{"empty list", apps.ToolMeta{Visibility: []apps.Visibility{}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate()
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, apps.ErrInvalidMeta)
			}
		})
	}
}

// TestMetaWire checks the JSON members the extension defines.
func TestMetaWire(t *testing.T) {
	b, err := json.Marshal(apps.ToolMeta{ResourceURI: "ui://a/b", Visibility: []apps.Visibility{apps.VisibleToApp}}.Meta(), json.Deterministic(true))
	require.NoError(t, err)
	assert.JSONEq(t, `{"ui":{"resourceUri":"ui://a/b","visibility":["app"]},"ui/resourceUri":"ui://a/b"}`, string(b))
	border := true
	b, err = json.Marshal(apps.ResourceMeta{
		CSP:           &apps.CSP{ConnectDomains: []string{"https://api.example.com"}, ResourceDomains: []string{"https://cdn.example.com"}, FrameDomains: []string{"https://www.youtube.com"}, BaseURIDomains: []string{"https://cdn.example.com"}},
		Permissions:   &apps.Permissions{ClipboardWrite: apps.Granted()},
		Domain:        "a904794854a047f6.example.com",
		PrefersBorder: &border,
	}.Meta(), json.Deterministic(true))
	require.NoError(t, err)
	assert.JSONEq(t, `{"ui":{"csp":{"connectDomains":["https://api.example.com"],"resourceDomains":["https://cdn.example.com"],"frameDomains":["https://www.youtube.com"],"baseUriDomains":["https://cdn.example.com"]},"permissions":{"clipboardWrite":{}},"domain":"a904794854a047f6.example.com","prefersBorder":true}}`, string(b))
	b, err = json.Marshal(apps.ResourceMeta{}.Meta())
	require.NoError(t, err)
	assert.JSONEq(t, `{"ui":{}}`, string(b))
}

const page = "<!doctype html><title>t</title><p>view</p>"

func noop(context.Context, struct{}) (string, error) { return "ok", nil }

func TestAddView(t *testing.T) {
	reg := registry.New(nil)
	err := apps.AddView(reg, apps.View{URI: "ui://t/bad.html", Name: "bad", Meta: apps.ResourceMeta{CSP: &apps.CSP{ResourceDomains: []string{"cdn.example.com"}}}}, []byte(page))
	assert.ErrorIs(t, err, apps.ErrInvalidDomain)
	assert.ErrorContains(t, err, "csp.resourceDomains")
	assert.ErrorIs(t, apps.AddView(reg, apps.View{URI: "https://t/x.html", Name: "x"}, []byte(page)), apps.ErrInvalidMeta)
	assert.ErrorIs(t, apps.AddView(reg, apps.View{URI: "ui://t/x.html", Name: "x"}, []byte{0xff, 0xfe}), apps.ErrInvalidMeta)
	assert.Error(t, apps.AddView(reg, apps.View{URI: "ui://t/x.html"}, []byte(page)), "a resource needs a name")
	big := []byte(strings.Repeat("a", apps.MaxViewBytes+1))
	err = apps.AddView(reg, apps.View{URI: "ui://t/big.html", Name: "big"}, big)
	assert.ErrorIs(t, err, apps.ErrViewTooLarge)
	assert.ErrorContains(t, err, "2097153 bytes")
	require.NoError(t, apps.AddView(reg, apps.View{URI: "ui://t/edge.html", Name: "edge"}, big[:apps.MaxViewBytes]), "exactly at the bound")
	assert.ErrorIs(t, apps.AddViewFS(reg, apps.View{URI: "ui://t/y.html", Name: "y"}, fstest.MapFS{}, "missing.html"), fs.ErrNotExist)
	require.True(t, reg.RemoveResource("ui://t/edge.html"))

	border := false
	meta := apps.ResourceMeta{CSP: &apps.CSP{ConnectDomains: []string{"https://api.example.com"}}, PrefersBorder: &border}
	require.NoError(t, apps.AddView(reg, apps.View{URI: "ui://t/view.html", Name: "view", Meta: meta}, []byte(page)))
	list, err := reg.ListResources(context.Background())
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, apps.MIMEType, list[0].MimeType)
	assert.EqualValues(t, len(page), *list[0].Size)
	got, err := reg.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "ui://t/view.html"})
	require.NoError(t, err)
	require.Len(t, got.Contents, 1)
	assert.Equal(t, apps.MIMEType, got.Contents[0].MimeType)
	assert.Equal(t, page, *got.Contents[0].Text)
	assert.Equal(t, meta, got.Contents[0].Meta[apps.MetaKey], "hosts read _meta.ui from the contents")
}

func TestCheck(t *testing.T) {
	view := func(reg *registry.Registry) {
		require.NoError(t, apps.AddView(reg, apps.View{URI: "ui://t/view.html", Name: "view"}, []byte(page)))
	}
	tests := []struct {
		name  string
		setup func(reg *registry.Registry)
		want  error
		text  string
	}{
		{"linked view registered", func(reg *registry.Registry) {
			view(reg)
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: apps.ToolMeta{ResourceURI: "ui://t/view.html"}.Meta()})
			registry.MustRegister(reg, "refresh", "d", noop, &registry.ToolOptions{Meta: apps.ToolMeta{Visibility: []apps.Visibility{apps.VisibleToApp}}.Meta()})
			registry.MustRegister(reg, "plain", "d", noop, nil)
		}, nil, ""},
		{"raw JSON shape accepted", func(reg *registry.Registry) {
			view(reg)
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://t/view.html"}}})
		}, nil, ""},
		{"unregistered view", func(reg *registry.Registry) {
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: apps.ToolMeta{ResourceURI: "ui://t/missing.html"}.Meta()})
		}, apps.ErrUnknownView, "tool show"},
		{"linked resource is not a view", func(reg *registry.Registry) {
			require.NoError(t, reg.AddTextResource(&mcp.Resource{URI: "ui://t/notes.txt", Name: "notes"}, "hi"))
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: apps.ToolMeta{ResourceURI: "ui://t/notes.txt"}.Meta()})
		}, apps.ErrNotAView, "text/plain"},
		{"unknown visibility", func(reg *registry.Registry) {
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: mcp.Meta{"ui": map[string]any{"visibility": []any{"everyone"}}}})
		}, apps.ErrInvalidMeta, "everyone"},
		{"wrong shape", func(reg *registry.Registry) {
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: mcp.Meta{"ui": "ui://t/view.html"}})
		}, apps.ErrInvalidMeta, "tool show"},
		{"legacy key only, unregistered", func(reg *registry.Registry) {
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: mcp.Meta{apps.LegacyResourceURIKey: "ui://t/missing.html"}})
		}, apps.ErrUnknownView, "ui://t/missing.html"},
		{"legacy key disagrees", func(reg *registry.Registry) {
			view(reg)
			registry.MustRegister(reg, "show", "d", noop, &registry.ToolOptions{Meta: mcp.Meta{"ui": apps.ToolMeta{ResourceURI: "ui://t/view.html"}, apps.LegacyResourceURIKey: "ui://t/other.html"}})
		}, apps.ErrInvalidMeta, "ui://t/other.html"},
		{"malformed CSP on a view registered without AddView", func(reg *registry.Registry) {
			require.NoError(t, reg.AddTextResource(&mcp.Resource{URI: "ui://t/raw.html", Name: "raw", MimeType: apps.MIMEType,
				Meta: mcp.Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []any{"https://api.example.com; script-src *"}}}}}, page))
		}, apps.ErrInvalidDomain, "view ui://t/raw.html"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registry.New(nil)
			tt.setup(reg)
			err := apps.Check(reg)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			assert.ErrorContains(t, err, tt.text)
			_, err = apps.Enable(reg, nil)
			assert.ErrorIs(t, err, tt.want, "Enable refuses what Check refuses")
		})
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	reg := registry.New(nil)
	registry.MustRegister(reg, "a", "d", noop, &registry.ToolOptions{Meta: apps.ToolMeta{ResourceURI: "ui://t/a.html"}.Meta()})
	registry.MustRegister(reg, "b", "d", noop, &registry.ToolOptions{Meta: apps.ToolMeta{ResourceURI: "ui://t/b.html"}.Meta()})
	err := apps.Check(reg)
	assert.ErrorContains(t, err, "ui://t/a.html")
	assert.ErrorContains(t, err, "ui://t/b.html")
}

func uiCaps(types ...any) mcp.ClientCapabilities {
	return mcp.ClientCapabilities{Extensions: map[string]any{apps.ExtensionID: map[string]any{"mimeTypes": types}}}
}

func TestClientRendersViews(t *testing.T) {
	tests := []struct {
		name string
		caps mcp.ClientCapabilities
		want bool
	}{
		{"none", mcp.ClientCapabilities{}, false},
		{"declared with the MIME type", uiCaps(apps.MIMEType), true},
		{"MIME type among others", uiCaps("text/html", apps.MIMEType), true},
		{"declared without mimeTypes", mcp.ClientCapabilities{Extensions: map[string]any{apps.ExtensionID: map[string]any{}}}, false},
		{"other MIME types only", uiCaps("text/html"), false},
		{"wrong shape", mcp.ClientCapabilities{Extensions: map[string]any{apps.ExtensionID: true}}, false},
		{"experimental is not the extension", mcp.ClientCapabilities{Experimental: map[string]any{apps.ExtensionID: map[string]any{"mimeTypes": []any{apps.MIMEType}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, apps.ClientRendersViews(tt.caps))
		})
	}
	assert.False(t, apps.RendersViews(context.Background()), "outside a request")
}

// server builds a server with a view tool that falls back to text, an
// app-only tool and a plain one.
func server(t *testing.T) *mcp.Server {
	t.Helper()
	reg := registry.New(nil)
	require.NoError(t, apps.AddView(reg, apps.View{URI: "ui://t/view.html", Name: "view"}, []byte(page)))
	registry.MustRegister(reg, "show", "Shows the table", func(ctx context.Context, _ struct{}) (string, error) {
		if apps.RendersViews(ctx) {
			return "shown in the view", nil
		}
		return "a | b\n1 | 2", nil
	}, &registry.ToolOptions{Meta: apps.ToolMeta{ResourceURI: "ui://t/view.html"}.Meta()})
	registry.MustRegister(reg, "refresh", "Refreshes the table", func(context.Context, struct{}) (string, error) { return "refreshed", nil },
		&registry.ToolOptions{Meta: apps.ToolMeta{Visibility: []apps.Visibility{apps.VisibleToApp}}.Meta()})
	registry.MustRegister(reg, "plain", "d", noop, nil)
	registry.MustRegister(reg, "raw_app_only", "d", noop, &registry.ToolOptions{Meta: mcp.Meta{"ui": map[string]any{"visibility": []any{"app"}}}})
	registry.MustRegister(reg, "typed_both", "d", noop, &registry.ToolOptions{Meta: apps.ToolMeta{Visibility: []apps.Visibility{apps.VisibleToApp, apps.VisibleToModel}}.Meta()})
	opts, err := apps.Enable(reg, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tools: reg, Resources: reg})
	require.NoError(t, err)
	return mcp.NewServer(opts)
}

func connect(t *testing.T, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx, serverEnd) }()
	c := mcp.NewClient(opts)
	require.NoError(t, c.Connect(ctx, clientEnd))
	t.Cleanup(func() { _ = c.Close(); cancel(); <-done })
	return c
}

func toolNames(t *testing.T, c *mcp.Client) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), "")
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func callText(t *testing.T, c *mcp.Client, name string) string {
	t.Helper()
	res, err := c.CallTool(context.Background(), name, map[string]any{})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res)
	require.Len(t, res.Content, 1)
	return res.Content[0].Text
}

// TestVisibilityAndFallback runs the same checks in both protocol
// revisions: a client that renders views sees every tool and gets the
// view's short text; one that does not sees no app-only tool and gets the
// text fallback; both may still call the app-only tool.
func TestVisibilityAndFallback(t *testing.T) {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
			srv := server(t)
			host := connect(t, srv, &mcp.ClientOptions{ProtocolVersion: version, Capabilities: uiCaps(apps.MIMEType)})
			plain := connect(t, srv, &mcp.ClientOptions{ProtocolVersion: version})

			assert.Equal(t, []string{"plain", "raw_app_only", "refresh", "show", "typed_both"}, toolNames(t, host))
			assert.Equal(t, []string{"plain", "show", "typed_both"}, toolNames(t, plain))
			assert.Equal(t, []string{"plain", "raw_app_only", "refresh", "show", "typed_both"}, toolNames(t, host), "the shared list is not modified")
			assert.Equal(t, "shown in the view", callText(t, host, "show"))
			assert.Equal(t, "a | b\n1 | 2", callText(t, plain, "show"))
			assert.Equal(t, "refreshed", callText(t, host, "refresh"), "a view calls app-only tools through its host")
			assert.Equal(t, "refreshed", callText(t, plain, "refresh"), "hidden from the list, still callable")

			res, err := host.ReadResource(context.Background(), "ui://t/view.html")
			require.NoError(t, err)
			assert.Equal(t, apps.MIMEType, res.Contents[0].MimeType)
		})
	}
}

// TestCapabilityPerRequest: in 2026-07-28 each request brings its own
// client capabilities, so one client may list with and without the
// extension.
func TestCapabilityPerRequest(t *testing.T) {
	srv := server(t)
	c := connect(t, srv, &mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Capabilities: uiCaps(apps.MIMEType)})
	assert.Equal(t, "shown in the view", callText(t, c, "show"))
	var out mcp.ListToolsResult
	require.NoError(t, c.Call(context.Background(), "tools/list", map[string]any{
		"_meta": map[string]any{
			revision.MetaProtocolVersion:    mcp.Version20260728,
			revision.MetaClientCapabilities: map[string]any{},
		},
	}, &out))
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"plain", "show", "typed_both"}, names)
}

func TestEnableDeclaresTheExtension(t *testing.T) {
	reg := registry.New(nil)
	in := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Extensions: map[string]any{"acme/x": map[string]any{}}}}
	opts, err := apps.Enable(reg, in)
	require.NoError(t, err)
	assert.Len(t, in.Capabilities.Extensions, 1, "the caller's options are not modified")
	assert.Len(t, in.Middleware, 0)
	assert.Contains(t, opts.Capabilities.Extensions, apps.ExtensionID)
	assert.Contains(t, opts.Capabilities.Extensions, "acme/x")
	assert.Len(t, opts.Middleware, 1)

	opts.Logger = slog.New(slog.DiscardHandler)
	opts.Tools, opts.Resources = reg, reg
	c := connect(t, mcp.NewServer(opts), &mcp.ClientOptions{ProtocolVersion: mcp.Version20260728})
	assert.Contains(t, c.DiscoverResult().Capabilities.Extensions, apps.ExtensionID)
}
