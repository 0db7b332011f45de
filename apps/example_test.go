package apps_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/keelmcp/keel/apps"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// A tool with a view, a tool only the view calls, and the text fallback
// for hosts that do not render views.
func Example() {
	reg := registry.New(nil)
	border := true
	if err := apps.AddView(reg, apps.View{
		URI:  "ui://inventory/table.html",
		Name: "inventory-table",
		Meta: apps.ResourceMeta{PrefersBorder: &border},
	}, []byte("<!doctype html><title>Inventory</title><table id=t></table>")); err != nil {
		panic(err)
	}
	registry.MustRegister(reg, "inventory", "Lists the stock",
		func(ctx context.Context, _ struct{}) (string, error) {
			if apps.RendersViews(ctx) {
				return "3 items (see the table)", nil
			}
			return "bolts 12, nuts 30, washers 7", nil // the text fallback
		}, &registry.ToolOptions{Meta: apps.ToolMeta{ResourceURI: "ui://inventory/table.html"}.Meta()})
	registry.MustRegister(reg, "restock", "Orders more of an item",
		func(context.Context, struct{}) (string, error) { return "ordered", nil },
		&registry.ToolOptions{Meta: apps.ToolMeta{Visibility: []apps.Visibility{apps.VisibleToApp}}.Meta()})

	opts, err := apps.Enable(reg, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Registry: reg})
	if err != nil {
		panic(err) // an unregistered view or a malformed CSP origin stops the server here
	}
	srv := mcp.NewServer(opts)

	ctx := context.Background()
	for _, caps := range []mcp.ClientCapabilities{
		{}, // a host without the extension
		{Extensions: map[string]any{apps.ExtensionID: map[string]any{"mimeTypes": []any{apps.MIMEType}}}},
	} {
		clientEnd, serverEnd := transport.NewPipe(nil)
		go srv.Run(ctx, serverEnd)
		c := mcp.NewClient(&mcp.ClientOptions{Capabilities: caps})
		if err := c.Connect(ctx, clientEnd); err != nil {
			panic(err)
		}
		list, _ := c.ListTools(ctx, "")
		res, _ := c.CallTool(ctx, "inventory", map[string]any{})
		fmt.Printf("renders views: %v, tools: %d, inventory says %q\n",
			apps.ClientRendersViews(caps), len(list.Tools), res.Content[0].Text)
		c.Close()
	}
	// Output:
	// renders views: false, tools: 1, inventory says "bolts 12, nuts 30, washers 7"
	// renders views: true, tools: 2, inventory says "3 items (see the table)"
}
