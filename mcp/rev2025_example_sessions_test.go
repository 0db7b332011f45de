//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// A Session is the connection and does not answer for its client: the
// request does. A program that lists its connections with the names
// their clients gave records each name from the session's initialize
// request, in a Middleware, keyed by the Session (the same pointer for
// every request of a connection), and drops the sessions Sessions no
// longer lists. (A 2026-07-28 connection has no client of its own: each
// of its requests names its own.)
func ExampleServer_Sessions() {
	var mu sync.Mutex
	clients := map[*mcp.Session]string{}
	record := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			if req.Method == "initialize" && err == nil { // accepted: its clientInfo is the session's
				mu.Lock()
				clients[req.Session] = req.ClientInfo().Name
				mu.Unlock()
			}
			return res, err
		}
	}
	srv := mcp.NewServer(&mcp.ServerOptions{Middleware: []mcp.Middleware{record}, Logger: slog.New(slog.DiscardHandler)})
	connected := func() []string {
		live := srv.Sessions()
		mu.Lock()
		defer mu.Unlock()
		kept := map[*mcp.Session]string{}
		var names []string
		for _, ss := range live {
			if name, ok := clients[ss]; ok {
				kept[ss] = name
				names = append(names, name)
			}
		}
		clients = kept // the sessions that ended are dropped
		slices.Sort(names)
		return names
	}

	stops := map[string]func(){} // each client's end, until it is called
	stop := func(name string) { stops[name](); delete(stops, name) }
	defer func() {
		for name := range stops {
			stop(name)
		}
	}()
	for _, name := range []string{"alpha", "beta"} {
		ctx, cancel := context.WithCancel(context.Background())
		clientEnd, serverEnd := transport.NewPipe(nil)
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Run(ctx, serverEnd) }()
		c := mcp.NewClient(&mcp.ClientOptions{Name: name, ProtocolVersion: mcp.Version20251125, Logger: slog.New(slog.DiscardHandler)})
		stops[name] = func() { c.Close(); cancel(); <-done }
		if err := c.Connect(ctx, clientEnd); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("connected:", connected())
	stop("alpha")
	fmt.Println("connected:", connected())
	stop("beta")
	fmt.Println("connected:", connected())
	// Output:
	// connected: [alpha beta]
	// connected: [beta]
	// connected: []
}
