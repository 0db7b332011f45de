package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/apps"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

func connect(t *testing.T, caps mcp.ClientCapabilities, version string) *mcp.Client {
	t.Helper()
	srv, err := newServer(slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(ctx, serverEnd) }()
	c := mcp.NewClient(&mcp.ClientOptions{Capabilities: caps, ProtocolVersion: version})
	require.NoError(t, c.Connect(ctx, clientEnd))
	t.Cleanup(func() { _ = c.Close(); cancel(); <-done })
	return c
}

var hostCaps = mcp.ClientCapabilities{Extensions: map[string]any{apps.ExtensionID: map[string]any{"mimeTypes": []any{apps.MIMEType}}}}

func TestExample(t *testing.T) {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			host := connect(t, hostCaps, version)
			plain := connect(t, mcp.ClientCapabilities{}, version)

			list, err := plain.ListTools(ctx, "")
			require.NoError(t, err)
			require.Len(t, list.Tools, 1, "restock is for the view only")
			assert.Equal(t, "inventory", list.Tools[0].Name)
			assert.Equal(t, viewURI, list.Tools[0].Meta[apps.LegacyResourceURIKey])
			list, err = host.ListTools(ctx, "")
			require.NoError(t, err)
			assert.Len(t, list.Tools, 2)

			res, err := plain.CallTool(ctx, "inventory", map[string]any{"warehouse": "north"})
			require.NoError(t, err)
			assert.Contains(t, res.Content[0].Text, "N-220  Lock nuts M8          3 (low)", "text fallback")
			out, err := mcp.DecodeStructured[InventoryOutput](res)
			require.NoError(t, err)
			assert.Len(t, out.Items, 4)

			res, err = host.CallTool(ctx, "inventory", map[string]any{"warehouse": "south"})
			require.NoError(t, err)
			assert.Equal(t, "2 items in the south warehouse, shown in the table.", res.Content[0].Text)

			res, err = host.CallTool(ctx, "restock", map[string]any{"sku": "C-700", "amount": 5})
			require.NoError(t, err)
			it, err := mcp.DecodeStructured[Item](res)
			require.NoError(t, err)
			assert.Equal(t, 125, it.Qty)
			_, err = host.CallTool(ctx, "restock", map[string]any{"sku": "nope", "amount": 5})
			var se *mcp.StructuredError
			require.ErrorAs(t, err, &se, "an isError result")
			assert.Equal(t, mcp.ErrNotFound, se.Code)

			view, err := host.ReadResource(ctx, viewURI)
			require.NoError(t, err)
			require.Len(t, view.Contents, 1)
			assert.Equal(t, apps.MIMEType, view.Contents[0].MimeType)
			assert.Contains(t, *view.Contents[0].Text, "ui/initialize", "the view bundles the App SDK")
			assert.NotContains(t, *view.Contents[0].Text, "<script src=", "a view loads nothing from elsewhere")
		})
	}
}

func TestHostPage(t *testing.T) {
	ts := httptest.NewServer(handler(http.NotFoundHandler()))
	defer ts.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	code, body := get("/")
	assert.Equal(t, http.StatusOK, code)
	assert.True(t, strings.Contains(body, `<script src="host.js">`))
	code, body = get("/host.js")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "ui/initialize", "the page bundles the host bridge")
	code, _ = get("/view.html")
	assert.Equal(t, http.StatusNotFound, code, "the view is served as a ui:// resource only")
}
