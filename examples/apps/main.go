// Command apps is a keel server with an interactive view (MCP Apps): the
// inventory tool's result is shown as a sortable table, whose Restock
// buttons call the restock tool through the host. Hosts that do not
// render views get a plain-text table instead, and never see restock.
//
//	go run ./examples/apps                         # stdio
//	go run ./examples/apps -http 127.0.0.1:3002    # streamable HTTP at /mcp
//
// Over HTTP it also serves an example host page at / (built with the
// ext-apps host bridge): open http://127.0.0.1:3002/ in a browser to see
// the view run as a host would run it. The view and the page are built
// from web/ by web/build.mjs into dist/ and embedded in the binary;
// nothing is fetched at run time.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/apps"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// dist holds the built view and the example host page (web/build.mjs).
//
//go:embed dist/view.html dist/host.html dist/host.js
var dist embed.FS

// viewURI is the ui:// URI of the inventory view.
const viewURI = "ui://keel-inventory/table.html"

// lowStock is the quantity under which the view marks an item.
const lowStock = 5

// Item is one line of the inventory.
type Item struct {
	SKU  string `json:"sku" jsonschema:"description=Stock-keeping unit"`
	Name string `json:"name"`
	Qty  int    `json:"qty" jsonschema:"minimum=0"`
}

// InventoryInput is what the inventory tool takes.
type InventoryInput struct {
	Warehouse string `json:"warehouse" jsonschema:"enum=north,enum=south,description=Which warehouse to list"`
}

// InventoryOutput is the inventory tool's structured result.
type InventoryOutput struct {
	Warehouse string `json:"warehouse"`
	LowStock  int    `json:"lowStock"`
	Items     []Item `json:"items"`
}

// RestockInput is what the restock tool takes.
type RestockInput struct {
	SKU    string `json:"sku" jsonschema:"minLength=1"`
	Amount int    `json:"amount" jsonschema:"minimum=1,maximum=100"`
}

// store is the example's inventory, kept in memory.
type store struct {
	mu    sync.Mutex
	items map[string][]Item // by warehouse
}

func newStore() *store {
	return &store{items: map[string][]Item{
		"north": {{"B-104", "Hex bolts M8", 42}, {"N-220", "Lock nuts M8", 3}, {"W-310", "Washers 8 mm", 18}, {"S-015", "Wood screws 4x40", 7}},
		"south": {{"B-104", "Hex bolts M8", 5}, {"C-700", "Cable ties", 120}},
	}}
}

func (s *store) list(warehouse string) []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Item(nil), s.items[warehouse]...)
}

func (s *store) restock(sku string, amount int) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, items := range s.items {
		for i := range items {
			if items[i].SKU == sku {
				items[i].Qty += amount
				return items[i], true
			}
		}
	}
	return Item{}, false
}

// newRegistry registers the view and the two tools; tests use it too.
func newRegistry(s *store) (*registry.Registry, error) {
	reg := registry.New(nil)
	border := true
	if err := apps.AddViewFS(reg, apps.View{
		URI:         viewURI,
		Name:        "inventory-table",
		Title:       "Inventory table",
		Description: "A sortable table of a warehouse's stock, with a Restock button per item",
		Meta:        apps.ResourceMeta{PrefersBorder: &border}, // no CSP: the view reaches nothing but its host
	}, dist, "dist/view.html"); err != nil {
		return nil, err
	}
	err := registry.Register(reg, "inventory", "Lists the stock of a warehouse",
		func(ctx context.Context, in InventoryInput) (*mcp.CallToolResult, error) {
			out := InventoryOutput{Warehouse: in.Warehouse, LowStock: lowStock, Items: s.list(in.Warehouse)}
			text := fmt.Sprintf("%d items in the %s warehouse, shown in the table.", len(out.Items), out.Warehouse)
			if !apps.RendersViews(ctx) {
				text = textTable(out) // the fallback for hosts without views
			}
			structured, err := json.Marshal(out)
			if err != nil {
				return nil, err
			}
			res := mcp.TextResult(text)
			res.StructuredContent = structured
			return res, nil
		}, &registry.ToolOptions{ReadOnly: true, Meta: apps.ToolMeta{ResourceURI: viewURI}.Meta()})
	if err != nil {
		return nil, err
	}
	err = registry.Register(reg, "restock", "Adds stock to an item (called by the inventory view)",
		func(_ context.Context, in RestockInput) (Item, error) {
			it, ok := s.restock(in.SKU, in.Amount)
			if !ok {
				return Item{}, mcp.NewToolError(mcp.ErrNotFound, "no item "+in.SKU, nil)
			}
			return it, nil
		}, &registry.ToolOptions{Meta: apps.ToolMeta{Visibility: []apps.Visibility{apps.VisibleToApp}}.Meta()})
	if err != nil {
		return nil, err
	}
	return reg, nil
}

// textTable renders the inventory as plain text.
func textTable(out InventoryOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Stock of the %s warehouse:\n", out.Warehouse)
	for _, it := range out.Items {
		low := ""
		if it.Qty < out.LowStock {
			low = " (low)"
		}
		fmt.Fprintf(&b, "%-6s %-18s %4d%s\n", it.SKU, it.Name, it.Qty, low)
	}
	return b.String()
}

// newServer builds the server: apps.Enable checks the view links at
// start-up and declares the extension.
func newServer(logger *slog.Logger) (*mcp.Server, error) {
	reg, err := newRegistry(newStore())
	if err != nil {
		return nil, err
	}
	opts, err := apps.Enable(reg, &mcp.ServerOptions{Name: "keel-apps-example", Version: "0.1.0", Logger: logger, Registry: reg})
	if err != nil {
		return nil, err
	}
	return mcp.NewServer(opts), nil
}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP at `host:port` (path /mcp, the example host page at /) instead of stdio")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv, err := newServer(logger)
	if err != nil {
		logger.Error("apps: cannot build the server", "error", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *addr == "" {
		err = srv.Run(ctx, transport.NewStdio(nil))
	} else {
		var ln net.Listener
		if ln, err = net.Listen("tcp", *addr); err == nil {
			logger.Info("apps: serving streamable HTTP", "mcp", "http://"+ln.Addr().String()+"/mcp", "host page", "http://"+ln.Addr().String()+"/")
			err = serveHTTP(ctx, srv, ln)
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("apps: server failed", "error", err)
		os.Exit(1)
	}
}

// handler serves the MCP endpoint at /mcp and the example host page at /.
func handler(mcpHandler http.Handler) http.Handler {
	page, _ := fs.Sub(dist, "dist")
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHandler)
	files := http.FileServerFS(page)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.ServeFileFS(w, r, page, "host.html") })
	mux.Handle("GET /host.js", files)
	return mux
}

// serveHTTP serves srv on ln until ctx ends, then shuts down gracefully.
func serveHTTP(ctx context.Context, srv *mcp.Server, ln net.Listener) error {
	h := streamhttp.NewServerHandler(srv, nil)
	hs := streamhttp.NewHTTPServer(handler(h), &streamhttp.HTTPServerOptions{Logger: srv.Options().Logger})
	errc := make(chan error, 1)
	go func() {
		errc <- hs.Serve(streamhttp.LimitListener(ln, &streamhttp.ListenerOptions{Logger: srv.Options().Logger}))
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	herr := h.Shutdown(sctx)
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down the HTTP server: %w", err)
	}
	return herr
}
