// Command agentops is a starter MCP server for agent operations, built on
// keel: memory, sessions, agents, workflows, traces and guard policies,
// with its data in SQLite or PostgreSQL.
//
// It is a module of its own (it imports the SQLite and PostgreSQL
// drivers). From its directory, examples/agentops:
//
//	go run .                                      # SQLite file agentops.db in the working directory
//	go run . -db /tmp/ops.db                      # another SQLite file
//	go run . -dsn postgres://user:pass@localhost/ops
//	go run . -config ops.json                     # with a configuration file
//
// It serves MCP over stdio and logs JSON lines to stderr.
//
// Tools:
//
//   - memory_store, memory_retrieve, memory_search, memory_list,
//     memory_delete: JSON objects under keys in namespaces (default
//     "default"), values at most 100 KB (RESOURCE_EXHAUSTED beyond), lists
//     and searches most recent first;
//   - session_create, session_status, session_complete, session_list:
//     collaboration sessions; agents run with a sessionId become
//     participants;
//   - agent_list, agent_get, agent_run: the demo agents echo, summarizer
//     and planner (package agents' tools);
//   - workflow_run, workflow_list, workflow_describe: step workflows whose
//     steps run through agents in order, each output feeding the next step;
//   - trace_list, trace_get, trace_analyze: one trace per tool call, recorded
//     by the call chain's audit sink, with the agent runs and workflow steps
//     made inside it; analyze gives counts, error rates and durations;
//   - guard_check, guard_list, guard_apply: path-glob policies ("**" spans
//     directories) with a change-radius limit, applied to sessions;
//   - health (limits, memory, scheduling delay, concurrent executions and a
//     healthy/degraded/unhealthy status) and server_ping (version, mode,
//     uptime);
//   - shutdown (destructive, admin-gated): stops the server gracefully;
//   - admin/registerTool and admin/unregisterTool (admin-gated, off by
//     default): tools of a predefined type (echo, health, agentProxy)
//     added and removed at run time;
//   - test_sleep (TEST mode only): a slow call, for trying timeouts,
//     cancellation and the shutdown drain.
//
// Resources memory://entries, sessions://active, traces://recent and
// agents://available are JSON views; prompts run_workflow, analyze_trace,
// search_memory, list_agents and run_agent ask the model to use the tools.
//
// # Configuration
//
// The configuration is loaded once, at start: keel's defaults (named
// agentops), then the optional JSON file named by -config (or by
// $KEEL_CONFIG), then KEEL_* environment variables, each overriding the one
// before (config.go lists what the server takes from it). An invalid value
// stops the server before it opens the database, with exit status 2 and a
// message naming the field and its source:
//
//	agentops: config: tools.adminPolicy.mode (KEEL_TOOLS_ADMIN_POLICY_MODE): must be one of deny_all, local_stdio_only, token (got "open")
//
// For example, a file that lets the local client manage the server:
//
//	{
//	  "mode": "FULL",
//	  "server": {"shutdownTimeoutMs": 15000},
//	  "tools": {"adminRegistrationEnabled": true, "adminPolicy": {"mode": "local_stdio_only"}},
//	  "security": {"dynamicRegistrationEnabled": true}
//	}
//
// Modes (mode, KEEL_MODE): FULL (default) serves every tool but test-only
// ones; READONLY only the tools that change nothing; TEST adds test_sleep;
// MINIMAL only health and server_ping.
//
// The admin policy (tools.adminPolicy) gates shutdown and the admin tools:
// deny_all (default: nobody, and the tools are not even listed);
// local_stdio_only (the client that launched this process and talks to it
// over its standard input and output; the same protocol relayed from a
// socket does not qualify); token (requests carrying the secret held by
// the environment variable tools.adminPolicy.tokenEnvVar in
// _meta["dev.keel/adminToken"]). The admin tools exist only when both
// tools.adminRegistrationEnabled and security.dynamicRegistrationEnabled
// are true.
//
// # Stopping
//
// The shutdown tool, SIGINT and SIGTERM stop the server the same way: it
// stops reading requests, lets the calls in flight finish and be answered
// (for up to server.shutdownTimeoutMs), drains the agents' queues, closes
// the database and exits with status 0. The client closing the server's
// standard input does the same.
//
// # Connecting an MCP client
//
// Build the binary (go build -o ~/bin/agentops . in examples/agentops), then:
//
// Claude Code:
//
//	claude mcp add agentops -- ~/bin/agentops -db ~/.local/share/agentops.db
//	claude mcp add --env KEEL_TOOLS_ADMIN_POLICY_MODE=local_stdio_only agentops -- ~/bin/agentops -config ~/agentops.json
//
// Codex CLI, in ~/.codex/config.toml:
//
//	[mcp_servers.agentops]
//	command = "/home/you/bin/agentops"
//	args = ["-db", "/home/you/.local/share/agentops.db", "-config", "/home/you/agentops.json"]
//	env = { KEEL_MODE = "READONLY" }
//
// Gemini CLI, in ~/.gemini/settings.json:
//
//	{
//	  "mcpServers": {
//	    "agentops": {
//	      "command": "/home/you/bin/agentops",
//	      "args": ["-db", "/home/you/.local/share/agentops.db"],
//	      "env": {"KEEL_TOOLS_ADMIN_POLICY_MODE": "local_stdio_only"}
//	    }
//	  }
//	}
//
// Give -db an absolute path: clients start servers in a working directory
// of their choosing.
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
	"time"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// version is the server's default version (server.version).
const version = "0.1.0"

func main() {
	dbPath := flag.String("db", "agentops.db", "SQLite database file (created if missing; ignored with -dsn)")
	dsn := flag.String("dsn", "", "PostgreSQL connection string (postgres://...); default: SQLite (-db)")
	configFile := flag.String("config", "", "JSON configuration `file` (default $"+keel.EnvConfigFile+"; none when unset)")
	flag.Parse()
	cfg, err := loadConfig(*configFile, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentops: %v\n", err)
		os.Exit(2)
	}
	log := cfg.Logger(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, *dbPath, *dsn, log); err != nil {
		log.Error("agentops", "error", err)
		os.Exit(1)
	}
}

// run serves the app on stdio until the client closes it, the shutdown
// tool is called, or ctx ends (SIGINT, SIGTERM); the last two stop
// gracefully (see serve).
func run(ctx context.Context, cfg keel.Config, dbPath, dsn string, log *slog.Logger) error {
	st, err := openStore(ctx, dbPath, dsn)
	if err != nil {
		return err
	}
	a, err := newApp(st, cfg, log)
	if err != nil {
		st.Close()
		return err
	}
	defer a.Close()
	where := "sqlite:" + dbPath
	if dsn != "" {
		where = "postgres"
	}
	log.Info("agentops: serving on stdio", "version", cfg.Server.Version, "mode", cfg.Mode, "store", where,
		"adminPolicy", cfg.Tools.AdminPolicy.Mode, "adminRegistration", cfg.DynamicRegistrationEffective())
	return a.serve(ctx, transport.NewStdio(nil))
}

// app is the server's state: the configuration, the store, the agents,
// the registry of tools, resources and prompts, and the stop request.
type app struct {
	cfg    keel.Config
	st     *store
	log    *slog.Logger
	coord  *agents.Coordinator
	traces *traceSink
	reg    *registry.Registry
	lim    *middleware.Limiter
	admin  *middleware.Admin
	stop   *stopper
}

// newApp builds the server over st as cfg says; Close releases both.
func newApp(st *store, cfg keel.Config, log *slog.Logger) (*app, error) {
	a := &app{cfg: cfg, st: st, log: log, traces: newTraceSink(st, log), stop: newStopper(),
		lim: middleware.NewLimiter(cfg.Resources.MaxConcurrentExecutions)}
	a.coord = agents.NewCoordinator(&agents.Options{Logger: log, MaxStateBytes: int(min(cfg.Tools.MaxStateBytes, math.MaxInt))})
	a.coord.Use(agentMiddleware(st, a.traces))
	if err := registerAgents(a.coord); err != nil {
		return nil, err
	}
	a.reg = registry.New(&registry.Options{Logger: log})
	registerMemoryTools(a.reg, st)
	registerSessionTools(a.reg, st)
	if err := agents.RegisterTools(a.reg, a.coord, &agents.ToolsOptions{Module: "agent", RunTimeout: time.Minute}); err != nil {
		return nil, fmt.Errorf("agent tools: %w", err)
	}
	registerWorkflowTools(a.reg, &workflowRunner{c: a.coord, traces: a.traces})
	registerTraceTools(a.reg, a.traces)
	registerGuardTools(a.reg, st)
	health := &middleware.HealthOptions{
		Name: cfg.Server.Name, Version: cfg.Server.Version,
		ToolTimeout: cfg.Tools.DefaultTimeout(), MaxPayloadBytes: cfg.Tools.MaxPayloadBytes,
		MaxStateBytes: cfg.Tools.MaxStateBytes, Limiter: a.lim,
	}
	if err := middleware.RegisterHealthTool(a.reg, health); err != nil {
		return nil, err
	}
	if err := middleware.RegisterPingTool(a.reg, &middleware.PingOptions{Version: cfg.Server.Version, Mode: middleware.Mode(cfg.Mode)}); err != nil {
		return nil, err
	}
	a.registerShutdownTool(a.reg, cfg.Server.ShutdownTimeout())
	registerTestTools(a.reg)
	registerResources(a.reg, st, a.traces, a.coord)
	registerPrompts(a.reg, a.coord)
	var err error
	if a.admin, err = newAdmin(cfg, a.reg, a.coord, health); err != nil {
		return nil, err
	}
	return a, nil
}

// server returns an MCP server over the app: keel's standard call chain
// with the configured limits, the mode and admin policies, and the admin
// tools when enabled, auditing every call into the traces.
func (a *app) server() *mcp.Server {
	opts := standardOptions(a.cfg, a.lim)
	opts.AuditSink = a.traces
	opts.Admission = admission(a.cfg.Mode, a.admin)
	opts.Admin = a.admin
	return mcp.NewServer(&mcp.ServerOptions{
		Name: a.cfg.Server.Name, Version: a.cfg.Server.Version, Logger: a.log,
		ShutdownTimeout: a.cfg.Server.ShutdownTimeout(),
		Registry:        a.reg,
		Tools:           middleware.Standard(a.reg, &opts),
	})
}

// serve serves one connection on t until its input ends (nil), or a stop
// is requested — the shutdown tool, or ctx ending — after which the calls
// in flight get up to server.shutdownTimeoutMs to finish and be answered
// before serve returns nil (see lifecycle.go).
func (a *app) serve(ctx context.Context, t transport.Transport) error {
	defer context.AfterFunc(ctx, a.stop.Stop)()
	err := a.server().Run(context.WithoutCancel(ctx), newStoppable(t, a.stop.Done()))
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// Close drains the agents and closes the store.
func (a *app) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Server.ShutdownTimeout())
	defer cancel()
	err := a.coord.Shutdown(ctx, agents.ShutdownDrain)
	return errors.Join(err, a.st.Close())
}
