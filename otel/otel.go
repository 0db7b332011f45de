package otel

import (
	"context"
	"strconv"

	gootel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans and metrics this
// package makes.
const ScopeName = "github.com/keelmcp/keel/otel"

// DurationBuckets are the explicit bucket boundaries, in seconds, the MCP
// semantic conventions give for the four duration histograms.
var DurationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// ErrorTypeToolError is the error.type of a tools/call answered with a
// result whose isError is true, as the conventions name it.
const ErrorTypeToolError = "tool_error"

// Options configure a Telemetry. The zero value (or nil) uses the global
// providers and propagator of go.opentelemetry.io/otel.
type Options struct {
	// TracerProvider makes the spans (nil = otel.GetTracerProvider()).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the histograms (nil = otel.GetMeterProvider()).
	MeterProvider metric.MeterProvider
	// Propagator reads and writes the trace context in params._meta
	// (nil = otel.GetTextMapPropagator(); set it to
	// propagation.NewCompositeTextMapPropagator(propagation.TraceContext{},
	// propagation.Baggage{}) for W3C traceparent, tracestate and baggage).
	Propagator propagation.TextMapPropagator
	// ResourceURIInSpanName makes the resource uri the target of the span
	// name of resources/read, resources/subscribe and
	// resources/unsubscribe. Off by default: the conventions advise
	// against high-cardinality span names (the uri is always the
	// mcp.resource.uri attribute).
	ResourceURIInSpanName bool
}

// Telemetry holds the tracer, meters and propagator of one instrumented
// server or client. Create it with New; it is safe for concurrent use.
type Telemetry struct {
	tracer        trace.Tracer
	prop          propagation.TextMapPropagator
	uriInName     bool
	serverKind    []trace.SpanStartOption // made once: options allocate
	clientKind    []trace.SpanStartOption
	serverOp      mcpconv.ServerOperationDuration
	clientOp      mcpconv.ClientOperationDuration
	serverSession mcpconv.ServerSessionDuration
	clientSession mcpconv.ClientSessionDuration
	tasks         *roundLinks // the tools/call spans that created tasks (server side)
}

// New returns a Telemetry configured by opts (nil = defaults). It returns
// an error only when a MeterProvider refuses to create a histogram.
func New(opts *Options) (*Telemetry, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = gootel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = gootel.GetMeterProvider()
	}
	if o.Propagator == nil {
		o.Propagator = gootel.GetTextMapPropagator()
	}
	tm := &Telemetry{
		tracer:     o.TracerProvider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:       o.Propagator,
		uriInName:  o.ResourceURIInSpanName,
		serverKind: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)},
		clientKind: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
		tasks:      newRoundLinks(),
	}
	m := o.MeterProvider.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	b := metric.WithExplicitBucketBoundaries(DurationBuckets...)
	var err error
	if tm.serverOp, err = mcpconv.NewServerOperationDuration(m, b); err != nil {
		return nil, err
	}
	if tm.clientOp, err = mcpconv.NewClientOperationDuration(m, b); err != nil {
		return nil, err
	}
	if tm.serverSession, err = mcpconv.NewServerSessionDuration(m, b); err != nil {
		return nil, err
	}
	if tm.clientSession, err = mcpconv.NewClientSessionDuration(m, b); err != nil {
		return nil, err
	}
	return tm, nil
}

// op is what one operation (a request or notification, either side) is
// known by: the attributes of its span and, for the low-cardinality ones,
// of its duration histogram.
type op struct {
	method    string
	id        string // jsonrpc.request.id ("" for a notification)
	tool      string
	prompt    string
	uri       string
	version   string // mcp.protocol.version
	session   string // mcp.session.id
	transport string // network.transport
	httpProto bool   // network.protocol.name = http
	errType   string // error.type ("" on success)
	code      string // rpc.response.status_code ("" unless a JSON-RPC error)
	errMsg    string // the span status description
}

// spanName is the conventions' "{mcp.method.name} {target}".
func (o *op) spanName(uriInName bool) string {
	switch {
	case o.tool != "":
		return o.method + " " + o.tool
	case o.prompt != "":
		return o.method + " " + o.prompt
	case uriInName && o.uri != "":
		return o.method + " " + o.uri
	}
	return o.method
}

// setTarget fills tool, prompt and uri from the params of method.
func (o *op) setTarget(p *params) {
	switch o.method {
	case "tools/call":
		o.tool = p.Name
	case "prompts/get":
		o.prompt = p.Name
	case "resources/read", "resources/subscribe", "resources/unsubscribe", "notifications/resources/updated":
		o.uri = p.URI
	}
}

// metricAttrs are the low-cardinality attributes of the duration
// histograms (no session id, request id or resource uri).
func (o *op) metricAttrs() []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 8)
	if o.tool != "" {
		a = append(a, semconv.GenAIToolName(o.tool), semconv.GenAIOperationNameExecuteTool)
	}
	if o.prompt != "" {
		a = append(a, semconv.GenAIPromptName(o.prompt))
	}
	if o.version != "" {
		a = append(a, semconv.McpProtocolVersion(o.version))
	}
	if o.transport != "" {
		a = append(a, semconv.NetworkTransportKey.String(o.transport))
	}
	if o.httpProto {
		a = append(a, semconv.NetworkProtocolName("http"))
	}
	if o.errType != "" {
		a = append(a, semconv.ErrorTypeKey.String(o.errType))
	}
	if o.code != "" {
		a = append(a, semconv.RPCResponseStatusCode(o.code))
	}
	return a
}

// startAttrs are the span attributes known when the operation starts.
func (o *op) startAttrs() []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 10)
	a = append(a, semconv.McpMethodNameKey.String(o.method))
	if o.id != "" {
		a = append(a, semconv.JSONRPCRequestID(o.id))
	}
	if o.tool != "" {
		a = append(a, semconv.GenAIToolName(o.tool), semconv.GenAIOperationNameExecuteTool)
	}
	if o.prompt != "" {
		a = append(a, semconv.GenAIPromptName(o.prompt))
	}
	if o.uri != "" {
		a = append(a, semconv.McpResourceURI(o.uri))
	}
	if o.version != "" {
		a = append(a, semconv.McpProtocolVersion(o.version))
	}
	if o.session != "" {
		a = append(a, semconv.McpSessionID(o.session))
	}
	if o.transport != "" {
		a = append(a, semconv.NetworkTransportKey.String(o.transport))
	}
	if o.httpProto {
		a = append(a, semconv.NetworkProtocolName("http"))
	}
	return a
}

// setCode records a JSON-RPC error answer.
func (o *op) setCode(code int64, msg string) {
	o.code = strconv.FormatInt(code, 10)
	o.errType = o.code
	o.errMsg = msg
}

// end closes span with the outcome of o and records its duration.
func end(ctx context.Context, span trace.Span, o *op) {
	if span.IsRecording() && o.errType != "" {
		a := []attribute.KeyValue{semconv.ErrorTypeKey.String(o.errType)}
		if o.code != "" {
			a = append(a, semconv.RPCResponseStatusCode(o.code))
		}
		span.SetAttributes(a...)
		span.SetStatus(codes.Error, o.errMsg)
	}
	span.End()
}

// networkTransport maps a keel transport Kind to network.transport (and
// whether network.protocol.name is http): tcp for streamable HTTP, pipe
// for stdio, a launched command's pipes and the in-memory pipe.
func networkTransport(kind string) (string, bool) {
	switch kind {
	case "http":
		return string(mcpconv.NetworkTransportTCP), true
	case "stdio", "stream", "memory", "command":
		return string(mcpconv.NetworkTransportPipe), false
	}
	return "", false
}
