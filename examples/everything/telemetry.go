package main

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keelmcp/keel/mcp"
	keelotel "github.com/keelmcp/keel/otel"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// The variables that name where OTLP goes: the common one turns on both
// signals, a per-signal one its own signal only.
const (
	otlpEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	otlpTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	otlpMetricsEndpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
)

// otlpProtocolVars are the variables that choose the OTLP protocol; this
// server exports over HTTP (http/protobuf, the default) only.
var otlpProtocolVars = []string{
	"OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
}

// telemetry is the OpenTelemetry wiring of the server: spans and the MCP
// histograms exported over OTLP/HTTP.
type telemetry struct {
	tm *keelotel.Telemetry
	tp *sdktrace.TracerProvider // nil when the spans are not exported
	mp *sdkmetric.MeterProvider // nil when the metrics are not exported
}

// startTelemetry exports the server's spans and metrics over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set in getenv (only the spans with
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT alone, only the metrics with
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT alone), and returns nil, nil when
// none is or OTEL_SDK_DISABLED is true. The exporters read the other
// OTEL_EXPORTER_OTLP_* variables from the process environment themselves
// (headers, timeout, compression, TLS); OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES describe the service (default service.name
// keel-everything). A protocol other than http/protobuf is an error that
// names the variable.
func startTelemetry(ctx context.Context, getenv func(string) string) (*telemetry, error) {
	traces := getenv(otlpEndpoint) != "" || getenv(otlpTracesEndpoint) != ""
	metrics := getenv(otlpEndpoint) != "" || getenv(otlpMetricsEndpoint) != ""
	if getenv("OTEL_SDK_DISABLED") == "true" || !traces && !metrics {
		return nil, nil
	}
	for _, v := range otlpProtocolVars {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%q: this server exports OTLP over HTTP only (http/protobuf)", v, p)
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "keel-everything")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	t := &telemetry{}
	opts := &keelotel.Options{
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		opts.TracerProvider = t.tp
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("OTLP metric exporter: %w", err), t.shutdown(ctx))
		}
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		opts.MeterProvider = t.mp
	}
	if t.tm, err = keelotel.New(opts); err != nil {
		return nil, errors.Join(err, t.shutdown(ctx))
	}
	return t, nil
}

// instrument adds the spans and operation histograms to the server's
// options: the middleware first, so that its span covers the rest.
func (t *telemetry) instrument(so *mcp.ServerOptions) {
	if t == nil {
		return
	}
	so.Middleware = append([]mcp.Middleware{t.tm.Middleware()}, so.Middleware...)
	so.SendMiddleware = append([]mcp.SendMiddleware{t.tm.SendMiddleware()}, so.SendMiddleware...)
}

// instrumentHTTP records mcp.server.session.duration for the 2025
// sessions of the streamable HTTP handler opts configures.
func (t *telemetry) instrumentHTTP(opts *streamhttp.Options) *streamhttp.Options {
	if t != nil {
		opts.OnSession = t.tm.HTTPSession
	}
	return opts
}

// shutdown exports what is still buffered and stops the exporters.
func (t *telemetry) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
