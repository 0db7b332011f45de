package otel_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	keelotel "github.com/keelmcp/keel/otel"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The later round of a 2026-07-28 call answered input_required links to
// the round that was answered so; each round's server span is the child
// of its client span.
func TestInputRoundLinks(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	type in struct{}
	type out struct {
		OK bool `json:"ok"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "confirm", "Asks before it acts",
		func(ctx context.Context, _ in) (out, error) {
			if !mcp.InputFromContext(ctx).Has("ok") {
				return out{}, mcp.InputRequired(map[string]mcp.InputRequest{
					"ok": mcp.ElicitInput(mcp.ElicitParams{Message: "Sure?", RequestedSchema: []byte(`{"type":"object","properties":{}}`)}),
				}, []byte("round-1"))
			}
			return out{OK: true}, nil
		}, nil)
	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, nil), Logger: quiet,
		Middleware: []mcp.Middleware{tm.Middleware()}})
	ce, se := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), se) }()
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Logger: quiet,
		OnElicitation: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}})
	require.NoError(t, c.Connect(context.Background(), tm.ClientTransport(ce)))
	res, err := c.CallTool(context.Background(), "confirm", map[string]any{})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, c.Close())
	<-done

	var clients, servers []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name != "tools/call confirm" {
			continue
		}
		if s.SpanKind == trace.SpanKindClient {
			clients = append(clients, s)
		} else {
			servers = append(servers, s)
		}
	}
	require.Len(t, clients, 2, "one client span per round")
	require.Len(t, servers, 2, "one server span per round")
	first, second := clients[0], clients[1]
	assert.Empty(t, first.Links)
	require.Len(t, second.Links, 1)
	assert.Equal(t, first.SpanContext.SpanID(), second.Links[0].SpanContext.SpanID())
	assert.Equal(t, keelotel.LinkKindInputRound, second.Links[0].Attributes[0].Value.AsString())
	parents := map[trace.SpanID]bool{}
	for _, s := range servers {
		parents[s.Parent.SpanID()] = true
		assert.NotContains(t, attrs(s), "error.type", "an input_required round is no failure")
	}
	assert.True(t, parents[first.SpanContext.SpanID()] && parents[second.SpanContext.SpanID()])
}

// The tasks/* requests about a task link to the tools/call that created
// it, even when made from an unrelated context (another trace).
func TestTaskLinks(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	type in struct{}
	reg := registry.New(nil)
	registry.MustRegister(reg, "report", "Builds a report",
		func(context.Context, in) (string, error) { return "done", nil },
		&registry.ToolOptions{TaskSupport: mcp.TaskOptional})
	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, nil), Logger: quiet,
		Tasks: &mcp.TaskOptions{}, Middleware: []mcp.Middleware{tm.Middleware()}})
	ce, se := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), se) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
	require.NoError(t, c.Connect(context.Background(), tm.ClientTransport(ce)))

	callCtx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	created, err := c.CallToolAsTask(callCtx, "report", map[string]any{}, 0)
	require.NoError(t, err)
	caller.End()
	pollCtx, poller := tp.Tracer("test").Start(context.Background(), "poller") // another trace
	_, err = c.TaskResult(pollCtx, created.Task.TaskID)
	require.NoError(t, err)
	poller.End()
	require.NoError(t, c.Close())
	<-done

	// On both sides, the tasks/result span links to the tools/call span
	// of its side, though it belongs to the poller's trace.
	for _, k := range []trace.SpanKind{trace.SpanKindClient, trace.SpanKindServer} {
		var call, result tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			switch {
			case s.Name == "tools/call report" && s.SpanKind == k:
				call = s
			case s.Name == "tasks/result" && s.SpanKind == k:
				result = s
			}
		}
		require.True(t, call.SpanContext.IsValid() && result.SpanContext.IsValid(), k)
		assert.Equal(t, poller.SpanContext().TraceID(), result.SpanContext.TraceID(), k)
		assert.Equal(t, caller.SpanContext().TraceID(), call.SpanContext.TraceID(), k)
		require.Len(t, result.Links, 1, k)
		assert.Equal(t, call.SpanContext.SpanID(), result.Links[0].SpanContext.SpanID(), k)
		assert.Equal(t, keelotel.LinkKindTask, result.Links[0].Attributes[0].Value.AsString(), k)
	}
}

// A request the server sends its client from a tool handler: the
// server's CLIENT span is the child of the tools/call span, and the
// client's SERVER span the child of that (its trace context travels in
// params._meta, written by ServerTransport).
func TestServerToClientRequest(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tm, err := keelotel.New(&keelotel.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	require.NoError(t, err)
	type in struct{}
	reg := registry.New(nil)
	registry.MustRegister(reg, "roots", "Counts the client's roots",
		func(ctx context.Context, _ in) (string, error) {
			roots, err := mcp.SessionFromContext(ctx).ListRoots(ctx)
			return strconv.Itoa(len(roots)), err
		}, nil)
	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, nil), Logger: quiet,
		Middleware: []mcp.Middleware{tm.Middleware()}, SendMiddleware: []mcp.SendMiddleware{tm.SendMiddleware()}})
	ce, se := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), tm.ServerTransport(se)) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet, Roots: []mcp.Root{{URI: "file:///src", Name: "src"}}})
	require.NoError(t, c.Connect(context.Background(), tm.ClientTransport(ce)))
	res, err := c.CallTool(context.Background(), "roots", map[string]any{})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, c.Close())
	<-done

	byKind := map[trace.SpanKind]tracetest.SpanStub{}
	var call tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "roots/list" {
			byKind[s.SpanKind] = s
		}
		if s.Name == "tools/call roots" && s.SpanKind == trace.SpanKindServer {
			call = s
		}
	}
	sender, receiver := byKind[trace.SpanKindClient], byKind[trace.SpanKindServer]
	require.True(t, sender.SpanContext.IsValid(), "the server's CLIENT span")
	require.True(t, receiver.SpanContext.IsValid(), "the client's SERVER span")
	assert.Equal(t, call.SpanContext.SpanID(), sender.Parent.SpanID())
	assert.Equal(t, sender.SpanContext.SpanID(), receiver.Parent.SpanID())
	assert.Equal(t, call.SpanContext.TraceID(), receiver.SpanContext.TraceID())
	assert.NotEmpty(t, attrs(receiver)["jsonrpc.request.id"])
	assert.NotContains(t, attrs(receiver), "error.type")
}
