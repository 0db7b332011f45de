// Command everything is a keel server exposing every kind of MCP feature:
// tools returning each content type, tools that log, report progress and
// call back into the client (sampling, elicitation), static resources, a
// resource template, a subscribable resource, prompts and completions. Its
// fixtures are the ones the official MCP conformance suite
// (@modelcontextprotocol/conformance) exercises, so it doubles as the
// server CI runs the suite against.
//
// It is also a starter written against keel's public API only, one concept
// per file: tools.go (content blocks, tool errors), streaming.go (logging,
// progress, SSE polling), clientrequests.go (sampling, elicitation),
// schema.go (a tool from a raw JSON Schema), resources.go (resources, a
// template, subscriptions), prompts.go (prompts, completions), media.go
// (the binary fixtures), inputrequired.go (input-required results of
// revision 2026-07-28: a handler asks the client for input by returning
// mcp.InputRequired), stateless.go (the diagnostics of revision
// 2026-07-28: a missing client capability, logging, list changes),
// tasks_modern.go (tools that run as tasks: the tasks extension of
// 2026-07-28).
//
//	go run ./examples/everything                             # MCP over stdio
//	go run ./examples/everything -http 127.0.0.1:3001        # streamable HTTP at /mcp
//	go run ./examples/everything -http 127.0.0.1:3001 -stateless
//
// Logs go to stderr; on stdio, stdout carries protocol messages only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/keelmcp/keel/transport/streamhttp"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP at `host:port` (path /mcp) instead of stdio")
	stateless := flag.Bool("stateless", false, "with -http: stateless mode (no sessions; any replica serves any request)")
	verbose := flag.Bool("v", false, "log debug messages")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	reg := newRegistry(logger)
	go updateWatchedResource(ctx, reg, watchInterval)
	srv := newServer(reg, logger)

	var err error
	if *addr == "" {
		err = srv.Run(ctx, transport.NewStdio(nil))
	} else {
		var ln net.Listener
		if ln, err = net.Listen("tcp", *addr); err == nil {
			logger.Info("everything: serving streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "stateless", *stateless)
			err = serveHTTP(ctx, srv, ln, &streamhttp.Options{Stateless: *stateless})
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.StopTasks(sctx); serr != nil { // task handlers end with the server
		logger.Warn("everything: task handlers still running at exit", "error", serr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("everything: server failed", "error", err)
		os.Exit(1)
	}
}

// newRegistry returns a registry holding every fixture: tools, resources,
// the resource template, prompts and their completions. Tests use it too.
func newRegistry(logger *slog.Logger) *registry.Registry {
	reg := registry.New(&registry.Options{Logger: logger})
	registerTools(reg)
	registerInputRequiredTools(reg)
	registerStatelessTools(reg)
	registerTaskTools(reg)
	registerResources(reg)
	registerPrompts(reg)
	registerInputRequiredPrompts(reg)
	return reg
}

// newServer serves reg: tools through keel's standard middleware chain;
// resources, prompts and completions straight from the registry; logging
// declared so that tools can log to the client.
func newServer(reg *registry.Registry, logger *slog.Logger) *mcp.Server {
	return mcp.NewServer(&mcp.ServerOptions{
		Name:         "keel-everything",
		Title:        "keel everything server",
		Version:      "1.0.0",
		Instructions: "Test fixtures for every MCP feature (the MCP conformance suite's server).",
		Tools:        middleware.Standard(reg, nil),
		Resources:    reg,
		Prompts:      reg,
		Completions:  reg,
		Logging:      true,
		Logger:       logger,
		Tasks:        &mcp.TaskOptions{}, // tasks_modern.go: the defaults
	})
}

// serveHTTP serves srv over streamable HTTP on ln at path /mcp until ctx
// ends, then shuts down gracefully: in-flight requests are answered, the
// sessions (and their GET streams) end, then the HTTP server closes. opts
// configures the handler (nil = defaults). By default it rejects Host and
// Origin headers other than localhost, 127.0.0.1 and ::1 (DNS rebinding
// protection): to serve under another name, list it in AllowedHosts.
func serveHTTP(ctx context.Context, srv *mcp.Server, ln net.Listener, opts *streamhttp.Options) error {
	h := streamhttp.NewServerHandler(srv, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	herr := h.Shutdown(sctx) // first the MCP sessions: http.Server.Shutdown waits for their open streams
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down the HTTP server: %w", err)
	}
	return herr
}
