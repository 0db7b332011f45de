package otel_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	keelotel "github.com/keelmcp/keel/otel"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport/streamhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// On streamable HTTP the span of an HTTP server handler (as otelhttp
// starts) is the parent of the MCP server span when the request's _meta
// carries no trace context, and a link of it when it does; the stateful
// session's id is mcp.session.id.
func TestStreamableHTTPAmbientSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	reg := registry.New(nil)
	registry.MustRegister(reg, "add", "Adds two integers",
		func(_ context.Context, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }, nil)
	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, nil), Logger: quiet,
		Middleware: []mcp.Middleware{tm.Middleware()}})
	h := streamhttp.NewServerHandler(srv, nil)
	httpTracer := tp.Tracer("http")
	var withHTTPSpan http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := httpTracer.Start(r.Context(), r.Method+" /mcp", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		keelotel.HTTPSessionID(h).ServeHTTP(w, r.WithContext(ctx))
	})
	ts := httptest.NewServer(withHTTPSpan)
	defer ts.Close()
	defer h.Close()

	ctx := context.Background()
	for _, instrumented := range []bool{false, true} {
		exp.Reset()
		ct := streamhttp.NewClientTransport(ts.URL, nil)
		c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
		if instrumented {
			require.NoError(t, c.Connect(ctx, tm.ClientTransport(ct)))
		} else {
			require.NoError(t, c.Connect(ctx, ct))
		}
		_, err = c.CallTool(ctx, "add", map[string]any{"a": 1, "b": 2})
		require.NoError(t, err)
		require.NoError(t, c.Close())

		spans := exp.GetSpans()
		byID := map[trace.SpanID]tracetest.SpanStub{}
		var server tracetest.SpanStub
		found := false
		for _, s := range spans {
			byID[s.SpanContext.SpanID()] = s
			if s.Name == "tools/call add" && s.SpanKind == trace.SpanKindServer {
				server, found = s, true
			}
		}
		require.True(t, found, "no server span")
		a := attrs(server)
		assert.Equal(t, "tcp", a["network.transport"])
		assert.Equal(t, "http", a["network.protocol.name"])
		assert.Equal(t, ct.SessionID(), a["mcp.session.id"])
		assert.NotEmpty(t, a["mcp.session.id"])
		if !instrumented {
			parent, ok := byID[server.Parent.SpanID()]
			require.True(t, ok, "parent span not exported")
			assert.Equal(t, "POST /mcp", parent.Name)
			assert.Empty(t, server.Links)
			continue
		}
		parent, ok := byID[server.Parent.SpanID()]
		require.True(t, ok)
		assert.Equal(t, "tools/call add", parent.Name)
		assert.Equal(t, trace.SpanKindClient, parent.SpanKind)
		assert.Equal(t, ct.SessionID(), attrs(parent)["mcp.session.id"])
		require.Len(t, server.Links, 1)
		assert.Equal(t, "POST /mcp", byID[server.Links[0].SpanContext.SpanID()].Name)
	}
}

// sessionPoints returns the data points of the session-duration histogram
// name that reader holds now.
func sessionPoints(t *testing.T, reader *sdkmetric.ManualReader, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				return h.DataPoints
			}
		}
	}
	return nil
}

// Over streamable HTTP, a 2025 session's duration is recorded on both
// sides: mcp.server.session.duration through the handler's OnSession when
// the session ends (here: the client's DELETE), mcp.client.session.duration
// when the client closes; both over tcp and http. A stateless handler has
// no sessions and records none on the server.
func TestStreamableHTTPSessionDuration(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			tm, err := keelotel.New(&keelotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
			require.NoError(t, err)
			reg := registry.New(nil)
			registry.MustRegister(reg, "add", "Adds two integers",
				func(_ context.Context, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }, nil)
			quiet := slog.New(slog.DiscardHandler)
			srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, nil), Logger: quiet})
			h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Stateless: stateless, OnSession: tm.HTTPSession})
			ts := httptest.NewServer(h)
			defer ts.Close()
			defer h.Close()

			ctx := context.Background()
			c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
			require.NoError(t, c.Connect(ctx, tm.ClientTransport(streamhttp.NewClientTransport(ts.URL, nil))))
			_, err = c.CallTool(ctx, "add", map[string]any{"a": 1, "b": 2})
			require.NoError(t, err)
			time.Sleep(20 * time.Millisecond) // a duration the points must cover
			assert.Empty(t, sessionPoints(t, reader, "mcp.server.session.duration"), "recorded before the session ended")
			require.NoError(t, c.Close())

			client := sessionPoints(t, reader, "mcp.client.session.duration")
			require.Len(t, client, 1)
			assert.Equal(t, uint64(1), client[0].Count)
			tr, _ := client[0].Attributes.Value("network.transport")
			assert.Equal(t, "tcp", tr.AsString())

			if stateless {
				h.Close()
				assert.Empty(t, sessionPoints(t, reader, "mcp.server.session.duration"))
				return
			}
			var server []metricdata.HistogramDataPoint[float64]
			require.Eventually(t, func() bool {
				server = sessionPoints(t, reader, "mcp.server.session.duration")
				return len(server) == 1
			}, 5*time.Second, 5*time.Millisecond, "the session's end is recorded once the DELETE ended it")
			p := server[0]
			assert.Equal(t, uint64(1), p.Count)
			assert.GreaterOrEqual(t, p.Sum, 0.02)
			assert.Equal(t, keelotel.DurationBuckets, p.Bounds)
			tr, _ = p.Attributes.Value("network.transport")
			assert.Equal(t, "tcp", tr.AsString())
			proto, _ := p.Attributes.Value("network.protocol.name")
			assert.Equal(t, "http", proto.AsString())
			_, hasErr := p.Attributes.Value("error.type")
			assert.False(t, hasErr, "a DELETE is a normal end")
		})
	}
}
