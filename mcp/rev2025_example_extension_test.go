//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// connectExample runs srv on one end of an in-memory pipe and returns a Client
// connected to the other.
func connectExample(srv *mcp.Server, opts *mcp.ClientOptions) *mcp.Client {
	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	go srv.Run(ctx, serverEnd)
	c := mcp.NewClient(opts)
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	return c
}

// Middleware wraps every incoming request and notification, built-in
// methods and custom ones alike; the first listed is the outermost.
func ExampleMiddleware() {
	trace := func(name string) mcp.Middleware {
		return func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, req *mcp.Request) (any, error) {
				fmt.Println(name, "before", req.Method)
				res, err := next(ctx, req)
				fmt.Println(name, "after", req.Method)
				return res, err
			}
		}
	}
	srv := mcp.NewServer(&mcp.ServerOptions{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []mcp.Middleware{trace("outer"), trace("inner")},
	})
	c := connectExample(srv, nil)
	defer c.Close()
	_ = c.Ping(context.Background())
	// Output:
	// outer before initialize
	// inner before initialize
	// inner after initialize
	// outer after initialize
	// outer before notifications/initialized
	// inner before notifications/initialized
	// inner after notifications/initialized
	// outer after notifications/initialized
	// outer before ping
	// inner before ping
	// inner after ping
	// outer after ping
}

// A server answers methods of its own beside the protocol's, in both
// protocol eras, and declares what it offers beyond them.
func ExampleServerOptions_methods() {
	srv := mcp.NewServer(&mcp.ServerOptions{
		Logger: slog.New(slog.DiscardHandler),
		Methods: map[string]mcp.MethodHandler{
			"acme/version": func(ctx context.Context, req *mcp.Request) (any, error) {
				return map[string]string{"build": "2026.11", "revision": req.ProtocolVersion()}, nil
			},
		},
		Notifications: map[string]mcp.MethodHandler{
			"acme/hello": func(ctx context.Context, req *mcp.Request) (any, error) {
				fmt.Println("client says", string(req.Params))
				return nil, nil
			},
		},
		Capabilities: &mcp.ServerCapabilities{Experimental: map[string]any{"acme/version": map[string]any{}}},
	})
	c := connectExample(srv, nil)
	defer c.Close()
	ctx := context.Background()
	var out struct {
		Build    string `json:"build"`
		Revision string `json:"revision"`
	}
	if err := c.Call(ctx, "acme/version", nil, &out); err != nil {
		panic(err)
	}
	fmt.Println(out.Build, out.Revision)
	_ = c.Notify(ctx, "acme/hello", map[string]int{"n": 1})
	_ = c.Ping(ctx) // the notification is handled before the next request
	fmt.Println("experimental:", len(c.InitializeResult().Capabilities.Experimental))
	// Output:
	// 2026.11 2025-11-25
	// client says {"n":1}
	// experimental: 1
}

// ServerOptions.Capabilities declares an experimental feature and an MCP
// extension the server supports, beside what keel derives. A 2025 client
// reads the experimental map in the initialize result; a 2026-07-28 client
// reads both maps on server/discover (the 2025 revisions have no extensions
// member).
func ExampleServerOptions_capabilities() {
	srv := mcp.NewServer(&mcp.ServerOptions{
		Logger: slog.New(slog.DiscardHandler),
		Capabilities: &mcp.ServerCapabilities{
			Experimental: map[string]any{"acme/search": map[string]any{"fuzzy": true}},
			Extensions:   map[string]any{"io.modelcontextprotocol/ui": map[string]any{}},
		},
	})
	old := connectExample(srv, nil)
	defer old.Close()
	caps := old.InitializeResult().Capabilities
	fmt.Println("2025-11-25:", slices.Sorted(maps.Keys(caps.Experimental)), len(caps.Extensions))

	modern := connectExample(srv, &mcp.ClientOptions{ProtocolVersion: mcp.Version20260728})
	defer modern.Close()
	caps = modern.DiscoverResult().Capabilities
	fmt.Println("2026-07-28:", slices.Sorted(maps.Keys(caps.Experimental)), slices.Sorted(maps.Keys(caps.Extensions)))
	// Output:
	// 2025-11-25: [acme/search] 0
	// 2026-07-28: [acme/search] [io.modelcontextprotocol/ui]
}

// Server.Sessions lists the live connections; NotifyAll reaches every
// initialized 2025 session and every 2026-07-28 subscriptions/listen stream
// whose filter covers the notification.
func ExampleServer_NotifyAll() {
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	got := make(chan string, 2)
	for i := range 2 {
		c := connectExample(srv, &mcp.ClientOptions{OnNotification: func(method string, params json.RawMessage) {
			got <- fmt.Sprintf("client %d got %s %s", i, method, params)
		}})
		defer c.Close()
		_ = c.Ping(context.Background()) // the session is initialized (RUNNING) once ping is answered
	}
	fmt.Println("sessions:", len(srv.Sessions()))
	if err := srv.NotifyAll(context.Background(), "acme/maintenance", map[string]string{"at": "02:00"}); err != nil {
		panic(err)
	}
	lines := []string{<-got, <-got}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// sessions: 2
	// client 0 got acme/maintenance {"at":"02:00"}
	// client 1 got acme/maintenance {"at":"02:00"}
}

// SendMiddleware sees every request and notification the server sends.
func ExampleSendMiddleware() {
	logSends := func(next mcp.SendHandler) mcp.SendHandler {
		return func(ctx context.Context, msg *mcp.Outgoing) error {
			fmt.Println("sending", msg.Method)
			return next(ctx, msg)
		}
	}
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), SendMiddleware: []mcp.SendMiddleware{logSends}})
	done := make(chan struct{})
	c := connectExample(srv, &mcp.ClientOptions{OnNotification: func(string, json.RawMessage) { close(done) }})
	defer c.Close()
	_ = c.Ping(context.Background()) // the session is initialized (RUNNING) once ping is answered
	if err := srv.Sessions()[0].Notify(context.Background(), "acme/ready", nil); err != nil {
		panic(err)
	}
	<-done
	// Output:
	// sending acme/ready
}
