package otel_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	keelotel "github.com/keelmcp/keel/otel"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// rig is a server and a client over the in-memory pipe, both instrumented
// with one SDK tracer provider (in-memory exporter) and meter provider
// (manual reader).
type rig struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	client *mcp.Client
	done   chan error
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}
type addOut struct {
	Sum int `json:"sum"`
}

func newRig(t *testing.T, version string) *rig {
	t.Helper()
	r := &rig{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader(), done: make(chan error, 1)}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	tm, err := keelotel.New(&keelotel.Options{
		TracerProvider: r.tp,
		MeterProvider:  mp,
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	})
	require.NoError(t, err)

	reg := registry.New(nil)
	registry.MustRegister(reg, "add", "Adds two integers",
		func(ctx context.Context, in addIn) (addOut, error) {
			// The handler sees the server span in its context, and the
			// caller's baggage.
			if !trace.SpanContextFromContext(ctx).IsValid() {
				t.Error("no span in the tool handler's context")
			}
			if m := baggage.FromContext(ctx).Member("tenant"); m.Value() != "" && m.Value() != "acme" {
				t.Errorf("baggage tenant = %q", m.Value())
			}
			return addOut{Sum: in.A + in.B}, nil
		}, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{
		Name: "calc", Tools: middleware.Standard(reg, nil),
		Logger:         slog.New(slog.DiscardHandler),
		Middleware:     []mcp.Middleware{tm.Middleware()},
		SendMiddleware: []mcp.SendMiddleware{tm.SendMiddleware()},
	})
	ce, se := transport.NewPipe(nil)
	go func() { r.done <- srv.Run(context.Background(), tm.ServerTransport(se)) }()
	r.client = mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: version, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, r.client.Connect(context.Background(), tm.ClientTransport(ce)))
	t.Cleanup(func() { r.close(t) })
	return r
}

func (r *rig) close(t *testing.T) {
	if r.client == nil {
		return
	}
	r.client.Close()
	r.client = nil
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Error("server did not stop")
	}
}

// span returns the one ended span named name of kind k.
func (r *rig) span(t *testing.T, name string, k trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range r.spans.GetSpans() {
		if s.Name == name && s.SpanKind == k {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q of kind %v", name, k)
	return found[0]
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// waitSpan waits until a span named name of kind k has ended (the server
// span ends just after the answer is written).
func (r *rig) waitSpan(t *testing.T, name string, k trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, s := range r.spans.GetSpans() {
			if s.Name == name && s.SpanKind == k {
				return true
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
	return r.span(t, name, k)
}

func TestToolCallSpans(t *testing.T) {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
			r := newRig(t, version)
			tracer := r.tp.Tracer("test")
			ctx, parent := tracer.Start(context.Background(), "caller")
			b, err := baggage.Parse("tenant=acme")
			require.NoError(t, err)
			ctx = baggage.ContextWithBaggage(ctx, b)
			res, err := r.client.CallTool(ctx, "add", map[string]any{"a": 2, "b": 3})
			require.NoError(t, err)
			require.False(t, res.IsError)
			parent.End()

			cs := r.span(t, "tools/call add", trace.SpanKindClient)
			ss := r.waitSpan(t, "tools/call add", trace.SpanKindServer)
			// client → server: one trace, the server span a child of the
			// client span, which is a child of the caller's span.
			assert.Equal(t, parent.SpanContext().TraceID(), cs.SpanContext.TraceID())
			assert.Equal(t, parent.SpanContext().SpanID(), cs.Parent.SpanID())
			assert.Equal(t, cs.SpanContext.TraceID(), ss.SpanContext.TraceID())
			assert.Equal(t, cs.SpanContext.SpanID(), ss.Parent.SpanID())
			assert.True(t, ss.Parent.IsRemote())

			for _, s := range []tracetest.SpanStub{cs, ss} {
				a := attrs(s)
				assert.Equal(t, "tools/call", a["mcp.method.name"])
				assert.Equal(t, "add", a["gen_ai.tool.name"])
				assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
				assert.Equal(t, version, a["mcp.protocol.version"])
				assert.Equal(t, "pipe", a["network.transport"])
				assert.NotEmpty(t, a["jsonrpc.request.id"])
				assert.NotContains(t, a, "error.type")
				assert.Equal(t, codes.Unset, s.Status.Code)
			}
			assert.Equal(t, attrs(cs)["jsonrpc.request.id"], attrs(ss)["jsonrpc.request.id"])
		})
	}
}

func TestErrorSpans(t *testing.T) {
	r := newRig(t, "")
	ctx := context.Background()

	// A JSON-RPC error: unknown tool.
	_, err := r.client.CallTool(ctx, "subtract", nil)
	require.Error(t, err)
	for _, k := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := r.waitSpan(t, "tools/call subtract", k)
		a := attrs(s)
		assert.Equal(t, "-32602", a["error.type"], k)
		assert.Equal(t, "-32602", a["rpc.response.status_code"], k)
		assert.Equal(t, codes.Error, s.Status.Code, k)
		assert.NotEmpty(t, s.Status.Description, k)
	}

	// A tool error: isError result.
	_, err = r.client.CallTool(ctx, "add", map[string]any{"a": "two"})
	require.Error(t, err)
	for _, k := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		s := r.waitSpan(t, "tools/call add", k)
		a := attrs(s)
		assert.Equal(t, "tool_error", a["error.type"], k)
		assert.NotContains(t, a, "rpc.response.status_code", k)
		assert.Equal(t, codes.Error, s.Status.Code, k)
	}
}

func TestMethodSpansAndNotifications(t *testing.T) {
	r := newRig(t, "")
	require.NoError(t, r.client.Ping(context.Background()))
	r.waitSpan(t, "ping", trace.SpanKindServer)
	r.span(t, "ping", trace.SpanKindClient)
	// initialize and notifications/initialized of the handshake.
	r.span(t, "initialize", trace.SpanKindClient)
	r.waitSpan(t, "initialize", trace.SpanKindServer)
	n := r.waitSpan(t, "notifications/initialized", trace.SpanKindServer)
	assert.NotContains(t, attrs(n), "jsonrpc.request.id")
}

func TestMetricPoints(t *testing.T) {
	r := newRig(t, "")
	_, err := r.client.CallTool(context.Background(), "add", map[string]any{"a": 1, "b": 1})
	require.NoError(t, err)
	_, err = r.client.CallTool(context.Background(), "subtract", nil)
	require.Error(t, err)
	r.waitSpan(t, "tools/call subtract", trace.SpanKindServer)
	r.close(t)

	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	hists := map[string]metricdata.Histogram[float64]{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, keelotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			assert.Equal(t, "s", m.Unit, m.Name)
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, m.Name)
			hists[m.Name] = h
		}
	}
	for _, name := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration",
		"mcp.server.session.duration", "mcp.client.session.duration"} {
		h, ok := hists[name]
		require.True(t, ok, "metric %s missing", name)
		require.NotEmpty(t, h.DataPoints, name)
		assert.Equal(t, keelotel.DurationBuckets, h.DataPoints[0].Bounds, name)
	}
	for _, name := range []string{"mcp.server.operation.duration", "mcp.client.operation.duration"} {
		var okCall, errCall bool
		for _, dp := range hists[name].DataPoints {
			m, _ := dp.Attributes.Value("mcp.method.name")
			tool, _ := dp.Attributes.Value("gen_ai.tool.name")
			et, hasErr := dp.Attributes.Value("error.type")
			_, hasID := dp.Attributes.Value("jsonrpc.request.id")
			assert.False(t, hasID, "request id is no metric attribute")
			if m.AsString() != "tools/call" {
				continue
			}
			switch {
			case tool.AsString() == "add" && !hasErr:
				okCall = dp.Count == 1
			case tool.AsString() == "subtract" && et.AsString() == "-32602":
				errCall = dp.Count == 1
			}
		}
		assert.True(t, okCall, "%s: a point for the successful call", name)
		assert.True(t, errCall, "%s: a point for the failed call", name)
	}
	for _, name := range []string{"mcp.server.session.duration", "mcp.client.session.duration"} {
		h := hists[name]
		require.Len(t, h.DataPoints, 1, name)
		assert.Equal(t, uint64(1), h.DataPoints[0].Count, name)
		tr, _ := h.DataPoints[0].Attributes.Value("network.transport")
		assert.Equal(t, "pipe", tr.AsString(), name)
	}
}

// The ambient span (an HTTP server span on streamable HTTP) is the parent
// when _meta carries no trace context, and a link when it does.
func TestAmbientParentAndLink(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	h := tm.Middleware()(func(context.Context, *mcp.Request) (any, error) { return nil, nil })

	httpCtx, httpSpan := tp.Tracer("http").Start(context.Background(), "POST /mcp", trace.WithSpanKind(trace.SpanKindServer))
	defer httpSpan.End()

	_, err = h(httpCtx, &mcp.Request{ID: []byte("1"), Method: "tools/list", Params: []byte(`{}`)})
	require.NoError(t, err)
	_, err = h(httpCtx, &mcp.Request{ID: []byte(`"r-2"`), Method: "prompts/get",
		Params: []byte(`{"name":"greet","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`)})
	require.NoError(t, err)

	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	list, get := spans[0], spans[1]
	assert.Equal(t, "tools/list", list.Name)
	assert.Equal(t, httpSpan.SpanContext().SpanID(), list.Parent.SpanID())
	assert.Empty(t, list.Links)

	assert.Equal(t, "prompts/get greet", get.Name)
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", get.SpanContext.TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", get.Parent.SpanID().String())
	require.Len(t, get.Links, 1)
	assert.Equal(t, httpSpan.SpanContext().SpanID(), get.Links[0].SpanContext.SpanID())
	a := attrs(get)
	assert.Equal(t, "greet", a["gen_ai.prompt.name"])
	assert.Equal(t, "r-2", a["jsonrpc.request.id"])
	assert.NotContains(t, a, "gen_ai.operation.name")
}

func TestResourceTargetAndMalformedParams(t *testing.T) {
	for _, uriInName := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp, ResourceURIInSpanName: uriInName})
		require.NoError(t, err)
		h := tm.Middleware()(func(context.Context, *mcp.Request) (any, error) { return nil, nil })
		for _, p := range []string{`{"uri":"file:///a.txt"}`, `{"uri":5,"_meta":[1]}`, `[1,2]`, `{"uri":`, ``} {
			_, err = h(context.Background(), &mcp.Request{ID: []byte("1"), Method: "resources/read", Params: []byte(p)})
			require.NoError(t, err)
		}
		spans := exp.GetSpans()
		require.Len(t, spans, 5)
		want := "resources/read"
		if uriInName {
			want += " file:///a.txt"
		}
		assert.Equal(t, want, spans[0].Name)
		assert.Equal(t, "file:///a.txt", attrs(spans[0])["mcp.resource.uri"])
		for _, s := range spans[1:] {
			assert.Equal(t, "resources/read", s.Name)
			assert.NotContains(t, attrs(s), "mcp.resource.uri")
		}
	}
}

// Requests whose response never comes end with the connection, and the
// number waiting is bounded.
func TestPendingSpansEndWithConnection(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	ce, se := transport.NewPipe(&transport.PipeOptions{Capacity: keelotel.MaxPendingSpans + 16})
	ct := tm.ClientTransport(ce)
	ctx := context.Background()
	n := keelotel.MaxPendingSpans + 10
	for i := range n {
		require.NoError(t, ct.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+itoa(i)+`,"method":"ping"}`)))
	}
	// Past the bound, spans end at once, marked.
	untracked := 0
	for _, s := range exp.GetSpans() {
		if attrs(s)["keel.otel.untracked_response"] == "true" {
			untracked++
		}
	}
	assert.Equal(t, 10, untracked)
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = se.Read(ctx) })
	wg.Wait()
	require.NoError(t, ct.Close())
	spans := exp.GetSpans()
	require.Len(t, spans, n)
	closed := 0
	for _, s := range spans {
		if attrs(s)["error.type"] == "transport_closed" {
			closed++
		}
	}
	assert.Equal(t, keelotel.MaxPendingSpans, closed)
	se.Close()
}

func itoa(i int) string {
	b := []byte{}
	if i == 0 {
		return "0"
	}
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// A request the client cancels ends its span as cancelled; one whose write
// fails ends it with the failure.
func TestClientSpanCancelledAndWriteError(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	ce, se := transport.NewPipe(nil)
	ct := tm.ClientTransport(ce)
	ctx := context.Background()
	require.NoError(t, ct.Write(ctx, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow"}}`)))
	require.NoError(t, ct.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)))
	se.Close()
	require.Error(t, ct.Write(ctx, []byte(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)))
	got := map[string]string{}
	for _, s := range exp.GetSpans() {
		got[s.Name] = attrs(s)["error.type"]
	}
	assert.Equal(t, map[string]string{
		"tools/call slow":         "cancelled",
		"notifications/cancelled": "",
		"ping":                    "transport_closed",
	}, got)
	require.NoError(t, ct.Close())
	assert.Len(t, exp.GetSpans(), 3, "nothing left pending")
}

// The wrappers keep the optional interfaces the Server and Client use.
func TestWrappersForwardOptionalInterfaces(t *testing.T) {
	tm, err := keelotel.New(nil)
	require.NoError(t, err)
	ce, se := transport.NewPipe(&transport.PipeOptions{MaxMessageBytes: 1234})
	defer ce.Close()
	for _, pair := range [][2]transport.Transport{{tm.ServerTransport(se), se}, {tm.ClientTransport(ce), ce}} {
		wrapped, inner := pair[0], pair[1]
		pw, ok := wrapped.(transport.PeerWatcher)
		require.True(t, ok)
		assert.Equal(t, inner.(transport.PeerWatcher).PeerGone(), pw.PeerGone())
		ml, ok := wrapped.(transport.MessageLimiter)
		require.True(t, ok)
		assert.Equal(t, 1234, ml.MaxMessageBytes())
		mc, ok := wrapped.(transport.MessageContexter)
		require.True(t, ok)
		ctx := context.Background()
		assert.Equal(t, ctx, mc.MessageContext(ctx), "the pipe attaches nothing")
		c, ok := wrapped.(handoff.Carrier)
		require.True(t, ok)
		assert.Nil(t, c.Handoff(), "the pipe hands nothing off")
		assert.Equal(t, inner.Kind(), wrapped.Kind())
	}
	// A transport that hands its messages off (streamable HTTP) does so
	// through the wrapper: the server records its answers' error codes in
	// the transport's own hand-off.
	x := &handoff.Request{}
	c, ok := tm.ServerTransport(carrierTransport{Transport: se, x: x}).(handoff.Carrier)
	require.True(t, ok)
	assert.Same(t, x, c.Handoff())
	se.Close()
	select {
	case <-tm.ServerTransport(ce).(transport.PeerWatcher).PeerGone():
	case <-time.After(5 * time.Second):
		t.Fatal("PeerGone did not close through the wrapper")
	}
}

// The server's requests the client is answering are bounded the same way,
// and end with the connection when unanswered.
func TestServingSpansBounded(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	ce, se := transport.NewPipe(&transport.PipeOptions{Capacity: keelotel.MaxPendingSpans + 16})
	defer se.Close()
	ct := tm.ClientTransport(ce)
	ctx := context.Background()
	n := keelotel.MaxPendingSpans + 3
	for i := range n {
		require.NoError(t, se.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+itoa(i)+`,"method":"roots/list"}`)))
	}
	for range n {
		_, err := ct.Read(ctx)
		require.NoError(t, err)
	}
	untracked := 0
	for _, s := range exp.GetSpans() {
		assert.Equal(t, trace.SpanKindServer, s.SpanKind)
		if attrs(s)["keel.otel.untracked_response"] == "true" {
			untracked++
		}
	}
	assert.Equal(t, 3, untracked)
	// One answered with an error, the rest left unanswered.
	require.NoError(t, ct.Write(ctx, []byte(`{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}}`)))
	require.NoError(t, ct.Close())
	counts := map[string]int{}
	for _, s := range exp.GetSpans() {
		counts[attrs(s)["error.type"]]++
	}
	assert.Equal(t, map[string]int{"": 3, "-32601": 1, "transport_closed": keelotel.MaxPendingSpans - 1}, counts)
}

// carrierTransport is a transport that hands off x with every message.
type carrierTransport struct {
	transport.Transport
	x *handoff.Request
}

func (c carrierTransport) Handoff() *handoff.Request { return c.x }
