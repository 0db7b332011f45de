// Command echo is the smallest keel server: one tool, echo, that returns its
// message as a single text block, plus the built-in health and server_ping
// tools. It serves MCP over stdio and is the server the benchmarks measure.
//
//	go run ./examples/echo
//	go run ./examples/echo -config echo.json
//	KEEL_LOGGING_LEVEL=debug go run ./examples/echo
//
// # Configuration
//
// The configuration is loaded once, at start: keel's defaults (with this
// server's name, version, 256 concurrency slots and warn-level logging),
// then the optional JSON file named by -config (or by $KEEL_CONFIG), then
// the KEEL_* environment variables, each overriding the one before. An
// invalid value stops the server before it serves anything, with exit
// status 2 and a message that names the field and the variable or file
// that set it:
//
//	echo: config: tools.defaultTimeoutMs (KEEL_TOOLS_DEFAULT_TIMEOUT_MS): must be > 0 (got -5)
//
// A file sets only what it names; for example:
//
//	{
//	  "server": {"name": "my-echo", "version": "1.0.0"},
//	  "tools": {"defaultTimeoutMs": 5000, "maxPayloadBytes": 65536},
//	  "resources": {"maxConcurrentExecutions": 64}
//	}
//
// The variables are named after the JSON path: KEEL_SERVER_NAME,
// KEEL_TOOLS_DEFAULT_TIMEOUT_MS, KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS,
// KEEL_LOGGING_LEVEL, KEEL_MODE, ... (the full list is in the keel package's
// LoadConfig documentation). KEEL_MODE=MINIMAL leaves only health and
// server_ping.
//
// # Connecting an MCP client
//
// Build the binary once, then point your client at its absolute path:
//
//	go build -o ~/bin/keel-echo ./examples/echo
//
// Claude Code:
//
//	claude mcp add keel-echo -- ~/bin/keel-echo
//	claude mcp add --env KEEL_LOGGING_LEVEL=info keel-echo -- ~/bin/keel-echo -config /path/to/echo.json
//
// Codex CLI, in ~/.codex/config.toml:
//
//	[mcp_servers.keel-echo]
//	command = "/home/you/bin/keel-echo"
//	args = ["-config", "/path/to/echo.json"]
//	env = { KEEL_LOGGING_LEVEL = "info" }
//
// Gemini CLI, in ~/.gemini/settings.json:
//
//	{
//	  "mcpServers": {
//	    "keel-echo": {
//	      "command": "/home/you/bin/keel-echo",
//	      "args": ["-config", "/path/to/echo.json"],
//	      "env": {"KEEL_LOGGING_LEVEL": "info"}
//	    }
//	  }
//	}
//
// The server logs JSON lines to stderr (the clients keep them in their MCP
// logs); stdout carries protocol messages only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// EchoInput is the echo tool's input.
type EchoInput struct {
	Message string `json:"message" jsonschema:"description=The text to send back"`
}

// defaults returns this server's default configuration: keel's, with its
// name and version, warn-level logging, and the concurrency limit raised
// from 10 to 256 so that a client keeping many calls in flight (the
// benchmark keeps 64) is served, not refused.
func defaults() keel.Config {
	c := keel.DefaultConfig()
	c.Server.Name = "keel-echo"
	c.Server.Version = "0.1.0"
	c.Resources.MaxConcurrentExecutions = 256
	c.Logging.Level = keel.LevelWarn
	return c
}

// loadConfig loads the configuration: defaults, then file (or
// $KEEL_CONFIG when file is ""), then KEEL_* variables read with getenv.
func loadConfig(file string, getenv func(string) string) (keel.Config, error) {
	d := defaults()
	return keel.LoadConfig(&keel.LoadOptions{File: file, Getenv: getenv, Defaults: &d})
}

// newServer builds the echo server from cfg: echo, health and server_ping
// behind the standard chain, with cfg's limits. A mode other than FULL adds
// its admission policy (MINIMAL, for one, hides echo); FULL needs none, so
// the default costs nothing per call.
func newServer(cfg keel.Config, logger *slog.Logger) (*mcp.Server, error) {
	reg := registry.New(nil)
	if err := registry.Register(reg, "echo", "Returns the message unchanged",
		func(_ context.Context, in EchoInput) (string, error) { return in.Message, nil },
		&registry.ToolOptions{ReadOnly: true}); err != nil {
		return nil, err
	}
	lim := middleware.NewLimiter(cfg.Resources.MaxConcurrentExecutions)
	if err := middleware.RegisterHealthTool(reg, &middleware.HealthOptions{
		Name: cfg.Server.Name, Version: cfg.Server.Version,
		ToolTimeout: cfg.Tools.DefaultTimeout(), MaxPayloadBytes: cfg.Tools.MaxPayloadBytes,
		MaxStateBytes: cfg.Tools.MaxStateBytes, Limiter: lim,
	}); err != nil {
		return nil, err
	}
	if err := middleware.RegisterPingTool(reg, &middleware.PingOptions{
		Version: cfg.Server.Version, Mode: middleware.Mode(cfg.Mode),
	}); err != nil {
		return nil, err
	}
	opts := &middleware.StandardOptions{
		MaxPayloadBytes: int(min(cfg.Tools.MaxPayloadBytes, math.MaxInt)),
		Limiter:         lim,
		DefaultTimeout:  cfg.Tools.DefaultTimeout(),
	}
	if cfg.Mode != keel.ModeFull {
		opts.Admission = middleware.ModePolicy(middleware.Mode(cfg.Mode))
	}
	return mcp.NewServer(&mcp.ServerOptions{
		Name:            cfg.Server.Name,
		Version:         cfg.Server.Version,
		Registry:        reg,
		Tools:           middleware.Standard(reg, opts),
		Logger:          logger,
		ShutdownTimeout: cfg.Server.ShutdownTimeout(),
	}), nil
}

func main() {
	configFile := flag.String("config", "", "JSON configuration `file` (default $"+keel.EnvConfigFile+"; none when unset)")
	flag.Parse()
	cfg, err := loadConfig(*configFile, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "echo: %v\n", err)
		os.Exit(2)
	}
	logger := cfg.Logger(os.Stderr)
	srv, err := newServer(cfg, logger)
	if err != nil {
		logger.Error("echo: cannot build the server", "error", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Run(ctx, transport.NewStdio(nil)); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("echo: server stopped", "error", err)
		os.Exit(1)
	}
}
