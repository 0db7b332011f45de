// Package keel is an embeddable Go library for building MCP (Model Context
// Protocol) servers: typed tools registered from Go functions, an audited
// tools/call middleware chain, stdio, streamable HTTP and in-memory
// transports, and a Client for unit tests. Go teams import it, copy its
// examples as starter servers, and test their servers in memory with the
// library's own Client.
//
// # Packages
//
//   - [github.com/keelmcp/keel/mcp]: the protocol vocabulary (requests,
//     results, content, capabilities, errors), the Server and the Client.
//     The Server is extended through ServerOptions: Middleware on every
//     incoming request and notification, SendMiddleware on every message it
//     sends, Methods and Notifications of your own, declared Capabilities;
//     Server.Sessions, Session.Notify and Server.NotifyAll reach clients.
//   - [github.com/keelmcp/keel/transport]: the Transport interface; stdio
//     (newline-delimited, stdout carries only protocol messages) and a
//     connected in-memory pair for tests.
//   - [github.com/keelmcp/keel/transport/streamhttp]: streamable HTTP, server
//     handler and client transport, with bearer-token auth (an audience is
//     required) and bounds on sessions, streams and request bodies.
//   - [github.com/keelmcp/keel/registry]: the tool catalog; Register[In, Out]
//     derives JSON Schemas from Go types and validates arguments and results.
//   - [github.com/keelmcp/keel/middleware]: the audited tools/call chain
//     (lock, validate, audit, dispatch under a deadline, concurrency with a
//     fair share per client, rate, payload and response limits, admission
//     policies, panic recovery) as composable values, its error codes with
//     their retryable flag, plus the health and server_ping tools.
//   - [github.com/keelmcp/keel/apps]: interactive views (MCP Apps): ui://
//     resources, the _meta.ui of tools and views, start-up checks, and
//     whether the requesting client renders views.
//   - [github.com/keelmcp/keel/agents] and [github.com/keelmcp/keel/aacp]:
//     in-process agent coordination and reliable agent-to-agent messaging
//     (the module github.com/keelmcp/keel/aacp/sqlstore keeps its ledger in
//     SQLite or PostgreSQL).
//   - examples/: runnable starter servers, each a main package to copy.
//
// The database drivers and OpenTelemetry live in modules of their own
// (aacp/sqlstore, postgres, otel; examples/everything and
// examples/agentops too), so a program that imports only the packages
// above has none of them in its module graph.
//   - keel (this package): logging and configuration shared by all of the
//     above.
//
// Imports run one way only, so there are no cycles:
//
//	examples/* ──► agents, middleware, registry, streamhttp, mcp, transport, keel
//	aacp/sqlstore ──► aacp ──► agents ──► registry ──► mcp ──► transport
//	middleware ──► registry, mcp, transport
//	apps ──► registry, mcp
//	transport/streamhttp ──► mcp, transport
//	mcp, aacp, transport/streamhttp ──► internal/...
//	keel (root) ──► nothing in this module: every package may import it
//
// # Hello, world
//
// A complete stdio server with one typed tool:
//
//	type GreetIn struct {
//		Name string `json:"name" jsonschema:"minLength=1,description=Who to greet"`
//	}
//	type GreetOut struct {
//		Greeting string `json:"greeting"`
//	}
//
//	func main() {
//		ctx := context.Background()
//		reg := registry.New(nil)
//		registry.MustRegister(reg, "greet", "Greets someone",
//			func(ctx context.Context, in GreetIn) (GreetOut, error) {
//				return GreetOut{Greeting: "Hello, " + in.Name + "!"}, nil
//			}, nil)
//		srv := mcp.NewServer(&mcp.ServerOptions{Name: "hello", Version: "0.1.0", Tools: middleware.Standard(reg, nil)})
//		if err := srv.Run(ctx, transport.NewStdio(nil)); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// # Logging and configuration
//
// keel logs with log/slog. [NewRedactingHandler] wraps any slog.Handler so
// that secrets never reach the log (values under denylisted keys, at any
// depth, become "[REDACTED]") and control characters in messages, keys and
// values are escaped; [Redact] and [Sanitize] do the same for values outside
// slog. On a stdio server, log to stderr: stdout belongs to the protocol.
//
// [LoadConfig] reads a starter server's [Config]: defaults, then a strictly
// decoded JSON file (LoadOptions.File, else $KEEL_CONFIG), then KEEL_*
// environment variables; an invalid value fails fast with a [ConfigError]
// naming the field. Secrets such as server.stateKey (the key that seals
// input-required states, shared by replicas) are never printed.
//
// # Safe by default
//
// Every resource a remote peer can make a server hold has a default bound
// and an error naming it when reached: concurrent tool calls (with a fair
// share per client), subscriptions, tasks, HTTP sessions and streams,
// request and response sizes, body read time, log lines caused by refused
// requests. A configuration that would be unsafe (a short requestState
// key, bearer auth without an audience) fails at start-up and says what to
// set. The README's "Limits and security" section lists every bound.
package keel
