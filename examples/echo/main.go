// Command echo is the smallest keel server: one tool, echo, that returns its
// message as a single text block. It serves MCP over stdio and is the server
// the benchmarks measure.
//
//	go run ./examples/echo
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// EchoInput is the echo tool's input.
type EchoInput struct {
	Message string `json:"message" jsonschema:"description=The text to send back"`
}

// newServer builds the echo server: one tool behind the standard chain. The
// concurrency limit is raised from the default 10 so that a client keeping
// many calls in flight (the benchmark keeps 64) is served, not refused.
func newServer(logger *slog.Logger) *mcp.Server {
	reg := registry.New(nil)
	registry.MustRegister(reg, "echo", "Returns the message unchanged",
		func(_ context.Context, in EchoInput) (string, error) { return in.Message, nil }, nil)
	return mcp.NewServer(&mcp.ServerOptions{
		Name:    "keel-echo",
		Version: "0.1.0",
		Tools:   middleware.Standard(reg, &middleware.StandardOptions{MaxConcurrent: 256}),
		Logger:  logger,
	})
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newServer(logger).Run(ctx, transport.NewStdio(nil)); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("echo: server stopped", "error", err)
		os.Exit(1)
	}
}
