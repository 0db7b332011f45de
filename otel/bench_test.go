package otel_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	keelotel "github.com/keelmcp/keel/otel"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkToolCall measures one tools/call round trip over the in-memory
// transport: without instrumentation, with it installed but no provider
// configured (the global no-op defaults), and with SDK providers
// recording every span and histogram.
func BenchmarkToolCall(b *testing.B) {
	noop, err := keelotel.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	sdk, err := keelotel.New(&keelotel.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter())),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		tm   *keelotel.Telemetry
	}{{"bare", nil}, {"noop", noop}, {"sdk", sdk}} {
		b.Run(bc.name, func(b *testing.B) { benchCall(b, bc.tm) })
	}
}

func benchCall(b *testing.B, tm *keelotel.Telemetry) {
	reg := registry.New(nil)
	registry.MustRegister(reg, "add", "Adds two integers",
		func(_ context.Context, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }, nil)
	quiet := slog.New(slog.DiscardHandler)
	opts := &mcp.ServerOptions{Tools: middleware.Standard(reg, nil), Logger: quiet}
	ce, se := transport.NewPipe(nil)
	if tm != nil {
		opts.Middleware = []mcp.Middleware{tm.Middleware()}
		opts.SendMiddleware = []mcp.SendMiddleware{tm.SendMiddleware()}
		ce, se = tm.ClientTransport(ce), tm.ServerTransport(se)
	}
	srv := mcp.NewServer(opts)
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, se) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
	if err := c.Connect(ctx, ce); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"a": 2, "b": 3}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.CallTool(ctx, "add", args); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c.Close()
	<-done
}
