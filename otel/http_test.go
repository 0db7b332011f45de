package otel_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	keelotel "github.com/keelmcp/keel/otel"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport/streamhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
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
