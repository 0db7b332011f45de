// Command everything is a keel server exposing every kind of MCP feature:
// tools returning each content type, tools that log, report progress and
// call back into the client (sampling, elicitation), static resources, a
// resource template, a subscribable resource, prompts and completions. Its
// fixtures are the ones the official MCP conformance suite
// (@modelcontextprotocol/conformance) exercises, so it doubles as the
// server CI runs the suite against.
//
// It is also a starter written against keel's public API only, one concept
// per file: config.go (configuration, the health and server_ping tools,
// the server), tools.go (content blocks, tool errors), streaming.go
// (logging, progress, SSE polling), clientrequests.go (sampling,
// elicitation), schema.go (a tool from a raw JSON Schema), resources.go
// (resources, a template, subscriptions), prompts.go (prompts,
// completions), media.go (the binary fixtures), inputrequired.go
// (input-required results of revision 2026-07-28: a handler asks the
// client for input by returning mcp.InputRequired), stateless.go (the
// diagnostics of revision 2026-07-28: a missing client capability, logging,
// list changes), tasks_modern.go (tools that run as tasks: the tasks
// extension of 2026-07-28).
//
// It is a module of its own (it imports the otel module and the
// OpenTelemetry exporters). From its directory, examples/everything:
//
//	go run .                                      # MCP over stdio
//	go run . -http 127.0.0.1:3001                 # streamable HTTP at /mcp
//	go run . -http 127.0.0.1:3001 -stateless
//	go run . -config everything.json              # with a configuration file
//
// Logs go to stderr as JSON lines (-v: debug level); on stdio, stdout
// carries protocol messages only. With OTEL_EXPORTER_OTLP_ENDPOINT set,
// spans and the MCP histograms are exported over OTLP/HTTP (telemetry.go).
//
// Over HTTP the server bounds what each peer (a client address; a token's
// subject behind authentication) may hold, whatever names it gives
// itself: sessions, streams, request slots, tasks, listen streams and
// connections, with the timeouts of streamhttp.NewHTTPServer and the
// connection limits of streamhttp.LimitListener (see serveHTTP).
//
// # Configuration
//
// The configuration is loaded once, at start: keel's defaults (named
// keel-everything, version 1.0.0), then the optional JSON file named by
// -config (or by $KEEL_CONFIG), then KEEL_* environment variables, each
// overriding the one before. With neither, the server is the conformance
// fixture server as CI runs it. An invalid value stops the server with
// exit status 2 and a message naming the field and its source:
//
//	everything: config: tools.defaultTimeoutMs (KEEL_TOOLS_DEFAULT_TIMEOUT_MS): must be > 0 (got -5)
//
// A file sets only what it names, for example
//
//	{"tools": {"defaultTimeoutMs": 60000}, "resources": {"maxConcurrentExecutions": 32}, "logging": {"level": "debug"}}
//
// and the variables follow the JSON paths (KEEL_TOOLS_DEFAULT_TIMEOUT_MS,
// KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS, KEEL_LOGGING_LEVEL, KEEL_MODE,
// ...; the list is in the keel package's LoadConfig documentation).
// Besides the fixtures, the server has keel's health tool (limits, memory,
// scheduling delay, concurrent executions, a healthy/degraded/unhealthy
// status) and server_ping (version, mode, uptime). KEEL_MODE=READONLY keeps
// the read-only tools, MINIMAL only health and server_ping.
//
// Replicas behind a load balancer (-http with -stateless) must share the
// key that seals the requestState of input-required results, so that a
// client may send its answers to any replica: set server.stateKey, or
// KEEL_SERVER_STATE_KEY, to the same standard base64 text of at least 32
// random bytes on each, for example
//
//	KEEL_SERVER_STATE_KEY=$(openssl rand -base64 32)
//
// generated once and kept as a secret. It is never logged or shown in an
// error; without it each process draws its own key.
//
// # Connecting an MCP client
//
// Build the binary (go build -o ~/bin/keel-everything . in examples/everything),
// then, over stdio:
//
// Claude Code:
//
//	claude mcp add keel-everything -- ~/bin/keel-everything
//	claude mcp add --transport http keel-everything-http http://127.0.0.1:3001/mcp   # a running -http server
//
// Codex CLI, in ~/.codex/config.toml:
//
//	[mcp_servers.keel-everything]
//	command = "/home/you/bin/keel-everything"
//	args = ["-config", "/path/to/everything.json"]
//
// Gemini CLI, in ~/.gemini/settings.json ("httpUrl" instead of "command"
// reaches a running -http server):
//
//	{
//	  "mcpServers": {
//	    "keel-everything": {
//	      "command": "/home/you/bin/keel-everything",
//	      "args": ["-config", "/path/to/everything.json"],
//	      "env": {"KEEL_LOGGING_LEVEL": "debug"}
//	    }
//	  }
//	}
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/postgres"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP at `host:port` (path /mcp) instead of stdio")
	stateless := flag.Bool("stateless", false, "with -http: stateless mode (no sessions; any replica serves any request)")
	verbose := flag.Bool("v", false, "log debug messages (overrides logging.level)")
	configFile := flag.String("config", "", "JSON configuration `file` (default $"+keel.EnvConfigFile+"; none when unset)")
	pgDSN := flag.String("postgres", "", "share tasks, notifications, SSE events and single-use states with other replicas through the PostgreSQL `DSN` (creates or migrates its schema)")
	lease := flag.Duration("lease", postgres.DefaultLeaseTimeout, "with -postgres: how long a task whose replica died stays working before another marks it failed")
	flag.Parse()

	cfg, err := loadConfig(*configFile, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "everything: %v\n", err)
		os.Exit(2)
	}
	if *verbose {
		cfg.Logging.Level = keel.LevelDebug
	}
	logger := cfg.Logger(os.Stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tel, err := startTelemetry(ctx, os.Getenv) // nil unless OTEL_EXPORTER_OTLP_ENDPOINT is set
	if err != nil {
		logger.Error("everything: cannot start OpenTelemetry", "error", err)
		os.Exit(2)
	}
	reg := newRegistry(logger)
	go updateWatchedResource(ctx, reg, watchInterval)
	var shared *replicas
	if *pgDSN != "" {
		if shared, err = openReplicas(ctx, *pgDSN, logger, *lease); err != nil {
			logger.Error("everything: cannot open the shared PostgreSQL database", "error", err)
			os.Exit(1)
		}
		defer shared.Close()
	}
	srv, err := sharedServer(cfg, reg, logger, shared, tel.instrument)
	if err != nil {
		logger.Error("everything: cannot build the server", "error", err)
		os.Exit(1)
	}

	if *addr == "" {
		err = srv.Run(ctx, transport.NewStdio(nil))
	} else {
		var ln net.Listener
		if ln, err = net.Listen("tcp", *addr); err == nil {
			logger.Info("everything: serving streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "stateless", *stateless)
			hopts := tel.instrumentHTTP(&streamhttp.Options{Stateless: *stateless})
			shared.httpOptions(hopts)
			err = serveHTTP(ctx, srv, ln, hopts)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout())
	defer cancel()
	if serr := srv.StopTasks(sctx); serr != nil { // task handlers end with the server
		logger.Warn("everything: task handlers still running at exit", "error", serr)
	}
	if terr := tel.shutdown(sctx); terr != nil { // the spans and metrics still buffered
		logger.Warn("everything: OpenTelemetry export at exit", "error", terr)
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

// serveHTTP serves srv over streamable HTTP on ln at path /mcp until ctx
// ends, then shuts down gracefully: in-flight requests are answered, the
// sessions (and their GET streams) end, then the HTTP server closes, all
// within the server's ShutdownTimeout (server.shutdownTimeoutMs). opts
// configures the handler (nil = defaults). By default it rejects Host and
// Origin headers other than localhost, 127.0.0.1 and ::1 (DNS rebinding
// protection): to serve under another name, list it in AllowedHosts.
// Connections are bounded as on any server open to a network: see
// newHTTPServer and limitConns.
func serveHTTP(ctx context.Context, srv *mcp.Server, ln net.Listener, opts *streamhttp.Options) error {
	h := streamhttp.NewServerHandler(srv, opts)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := newHTTPServer(mux, srv.Options().Logger)
	var proxies []string
	if opts != nil {
		proxies = opts.TrustedProxies
	}
	lln := limitConns(ln, srv.Options().Logger, proxies)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(lln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), srv.Options().ShutdownTimeout)
	defer cancel()
	herr := h.Shutdown(sctx) // first the MCP sessions: http.Server.Shutdown waits for their open streams
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down the HTTP server: %w", err)
	}
	return herr
}

// newHTTPServer returns the HTTP server of serveHTTP for handler: the
// timeouts and header limit of streamhttp.NewHTTPServer (10 s to send the
// headers, 60 s for an idle keep-alive connection, 60 s for one write, 64
// KiB of headers), its error log on logger.
func newHTTPServer(handler http.Handler, logger *slog.Logger) *http.Server {
	return streamhttp.NewHTTPServer(handler, &streamhttp.HTTPServerOptions{Logger: logger})
}

// limitConns bounds the connections serveHTTP accepts on ln
// (streamhttp.LimitListener with its defaults): beyond them, in all or
// from one address, a new connection is closed at once and logged at a
// bounded rate. Connections from the trusted proxies count in the total
// only.
func limitConns(ln net.Listener, logger *slog.Logger, proxies []string) *streamhttp.LimitedListener {
	return streamhttp.LimitListener(ln, &streamhttp.ListenerOptions{Logger: logger, TrustedProxies: proxies})
}
