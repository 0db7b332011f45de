package main

import (
	"log/slog"
	"math"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

// Configuration: keel's defaults with this server's name and version, then
// the JSON file named by -config (or $KEEL_CONFIG), then KEEL_* variables.
// Loaded once at start; an invalid value stops the server with exit status
// 2 and a message naming the field. With no file and no variables the
// server is exactly the conformance fixture server.

// defaults returns this server's default configuration.
func defaults() keel.Config {
	c := keel.DefaultConfig()
	c.Server.Name = "keel-everything"
	c.Server.Version = "1.0.0"
	return c
}

// loadConfig loads the configuration: defaults, then file (or
// $KEEL_CONFIG when file is ""), then KEEL_* variables read with getenv.
func loadConfig(file string, getenv func(string) string) (keel.Config, error) {
	d := defaults()
	return keel.LoadConfig(&keel.LoadOptions{File: file, Getenv: getenv, Defaults: &d})
}

// newServer serves reg with the default configuration (see
// configuredServer); tests use it.
func newServer(reg *registry.Registry, logger *slog.Logger) *mcp.Server {
	srv, err := configuredServer(defaults(), reg, logger)
	if err != nil {
		panic(err) // a programming error: the defaults are valid and reg has no health or server_ping yet
	}
	return srv
}

// configuredServer adds the health and server_ping tools to reg and serves
// it as cfg says: tools through keel's standard middleware chain with cfg's
// limits (and the admission policy of cfg's mode unless it is FULL, which
// admits every fixture); resources, prompts and completions straight from
// the registry; logging declared so that tools can log to the client; the
// requestStates of input-required results sealed with server.stateKey
// (KEEL_SERVER_STATE_KEY), so that -stateless replicas sharing the key
// accept each other's states, or with a random key per process when it is
// unset. Each function in with may then amend the options (main adds the
// OpenTelemetry middleware that way).
func configuredServer(cfg keel.Config, reg *registry.Registry, logger *slog.Logger, with ...func(*mcp.ServerOptions)) (*mcp.Server, error) {
	return sharedServer(cfg, reg, logger, nil, with...)
}

// sharedServer is configuredServer for a replica that shares its tasks,
// notifications and used states with others (shared; nil: none).
func sharedServer(cfg keel.Config, reg *registry.Registry, logger *slog.Logger, shared *replicas, with ...func(*mcp.ServerOptions)) (*mcp.Server, error) {
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
	stateKey, err := cfg.Server.StateKeyBytes() // nil when unset: a random key per process
	if err != nil {
		return nil, err
	}
	so := &mcp.ServerOptions{
		Name:            cfg.Server.Name,
		Title:           "keel everything server",
		Version:         cfg.Server.Version,
		Instructions:    "Test fixtures for every MCP feature (the MCP conformance suite's server).",
		Registry:        reg, // tools, resources, prompts and completions
		Tools:           middleware.Standard(reg, opts),
		Logging:         true,
		Logger:          logger,
		ShutdownTimeout: cfg.Server.ShutdownTimeout(),
		Tasks:           &mcp.TaskOptions{}, // tasks_modern.go: the defaults
		StateKey:        stateKey,
	}
	if err := shared.apply(so); err != nil {
		return nil, err
	}
	for _, f := range with {
		f(so)
	}
	if err := so.Validate(); err != nil {
		return nil, err
	}
	return mcp.NewServer(so), nil
}
