// Command agentops is a starter MCP server for agent operations, built on
// keel: memory, sessions, agents, workflows, traces and guard policies
// (seed 002's catalogue), with its data in SQLite or PostgreSQL.
//
//	go run ./examples/agentops                      # SQLite file agentops.db in the working directory
//	go run ./examples/agentops -db /tmp/ops.db      # another SQLite file
//	go run ./examples/agentops -dsn postgres://user:pass@localhost/ops
//
// It serves MCP over stdio and logs to stderr.
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
//     directories) with a change-radius limit, applied to sessions.
//
// Resources memory://entries, sessions://active, traces://recent and
// agents://available are JSON views; prompts run_workflow, analyze_trace,
// search_memory, list_agents and run_agent ask the model to use the tools.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// version is the server's version.
const version = "0.1.0"

func main() {
	dbPath := flag.String("db", "agentops.db", "SQLite database file (created if missing; ignored with -dsn)")
	dsn := flag.String("dsn", "", "PostgreSQL connection string (postgres://...); default: SQLite (-db)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dbPath, *dsn, log); err != nil {
		log.Error("agentops", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dbPath, dsn string, log *slog.Logger) error {
	st, err := openStore(ctx, dbPath, dsn)
	if err != nil {
		return err
	}
	a, err := newApp(st, log)
	if err != nil {
		st.Close()
		return err
	}
	defer a.Close()
	where := "sqlite:" + dbPath
	if dsn != "" {
		where = "postgres"
	}
	log.Info("agentops: serving on stdio", "version", version, "store", where)
	err = a.server().Run(ctx, transport.NewStdio(nil))
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// app is the server's state: the store, the agents, and the registry of
// tools, resources and prompts.
type app struct {
	st     *store
	log    *slog.Logger
	coord  *agents.Coordinator
	traces *traceSink
	reg    *registry.Registry
}

// newApp builds the server over st; Close releases both.
func newApp(st *store, log *slog.Logger) (*app, error) {
	a := &app{st: st, log: log, traces: newTraceSink(st, log)}
	a.coord = agents.NewCoordinator(&agents.Options{Logger: log})
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
	registerResources(a.reg, st, a.traces, a.coord)
	registerPrompts(a.reg, a.coord)
	return a, nil
}

// server returns an MCP server over the app: keel's standard call chain,
// auditing every call into the traces.
func (a *app) server() *mcp.Server {
	return mcp.NewServer(&mcp.ServerOptions{
		Name: "agentops", Version: version, Logger: a.log,
		Tools:     middleware.Standard(a.reg, &middleware.StandardOptions{AuditSink: a.traces}),
		Resources: a.reg,
		Prompts:   a.reg,
	})
}

// Close drains the agents and closes the store.
func (a *app) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.coord.Shutdown(ctx, agents.ShutdownDrain)
	return errors.Join(err, a.st.Close())
}
