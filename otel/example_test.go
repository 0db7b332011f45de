package otel_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	keelotel "github.com/keelmcp/keel/otel"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A server and a client over the in-memory transport, both instrumented:
// the client's span of each call is the parent of the server's span, the
// trace context riding in params._meta. In production, put an OTLP
// exporter where the stdout one is (see the README's Observability
// section).
func Example() {
	type addIn struct{ A, B int }
	type addOut struct{ Sum int }
	reg := registry.New(nil)
	registry.MustRegister(reg, "add", "Adds two integers",
		func(_ context.Context, in addIn) (addOut, error) { return addOut{in.A + in.B}, nil }, nil)

	// Spans go to the stdout exporter (pretty-printed JSON; pass
	// os.Stdout, the default, in a program: the example discards it since
	// span ids and times differ on every run) and to an in-memory exporter
	// the example prints from.
	stdout, err := stdouttrace.New(stdouttrace.WithWriter(io.Discard), stdouttrace.WithPrettyPrint())
	if err != nil {
		panic(err)
	}
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(stdout), sdktrace.WithSyncer(mem))
	tm, err := keelotel.New(&keelotel.Options{
		TracerProvider: tp,
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	})
	if err != nil {
		panic(err)
	}

	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{
		Tools: middleware.Standard(reg, nil), Logger: quiet,
		Middleware:     []mcp.Middleware{tm.Middleware()},
		SendMiddleware: []mcp.SendMiddleware{tm.SendMiddleware()},
	})
	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, tm.ServerTransport(serverEnd)) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
	if err := c.Connect(ctx, tm.ClientTransport(clientEnd)); err != nil {
		panic(err)
	}
	if _, err := c.CallTool(ctx, "add", map[string]int{"A": 2, "B": 3}); err != nil {
		panic(err)
	}
	c.Close()
	<-done

	spans := mem.GetSpans()
	byID := map[string]string{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s.Name + " (" + s.SpanKind.String() + ")"
	}
	for _, s := range spans {
		if s.Name != "tools/call add" {
			continue
		}
		parent := byID[s.Parent.SpanID().String()]
		if parent == "" {
			parent = "none"
		}
		fmt.Printf("%s (%s), parent: %s\n", s.Name, s.SpanKind, parent)
	}
	// Output:
	// tools/call add (server), parent: tools/call add (client)
	// tools/call add (client), parent: none
}
