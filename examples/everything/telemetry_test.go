package main

import (
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// collector is a local OTLP/HTTP receiver: it decodes what the exporters
// post to /v1/traces and /v1/metrics and counts spans by name and the
// metrics it was sent.
type collector struct {
	mu      sync.Mutex
	spans   map[string]int
	metrics map[string]int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans[s.Name]++
				}
			}
		}
		out, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	case "/v1/metrics":
		var req collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c.metrics[m.Name]++
				}
			}
		}
		out, _ := proto.Marshal(&collmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	default:
		http.NotFound(w, r)
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the server exports its spans and
// the MCP histograms over OTLP/HTTP: a session over streamable HTTP, as
// main serves it, reaches a local collector as the server spans of its
// requests, the operation histogram and the session histogram.
func TestOTLPExport(t *testing.T) {
	col := &collector{spans: map[string]int{}, metrics: map[string]int{}}
	cs := httptest.NewServer(col)
	defer cs.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", cs.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "everything-test")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tel, err := startTelemetry(ctx, os.Getenv)
	require.NoError(t, err)
	require.NotNil(t, tel)
	srv, err := configuredServer(defaults(), newRegistry(quiet), quiet, tel.instrument)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, srv, ln, tel.instrumentHTTP(&streamhttp.Options{})) }()

	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
	require.NoError(t, c.Connect(ctx, streamhttp.NewClientTransport("http://"+ln.Addr().String()+"/mcp",
		&streamhttp.ClientOptions{Logger: quiet, DisableGETStream: true})))
	_, err = c.CallTool(ctx, "test_simple_text", nil)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	cancel()
	require.NoError(t, <-served)
	require.NoError(t, tel.shutdown(context.Background())) // exports what is buffered

	col.mu.Lock()
	defer col.mu.Unlock()
	assert.Equal(t, 1, col.spans["tools/call test_simple_text"], "spans received: %v", col.spans)
	assert.Equal(t, 1, col.spans["initialize"], "spans received: %v", col.spans)
	for _, m := range []string{"mcp.server.operation.duration", "mcp.server.session.duration"} {
		assert.Positive(t, col.metrics[m], "%s not exported; metrics received: %v", m, col.metrics)
	}
}

// Without an OTLP endpoint (or with OTEL_SDK_DISABLED) nothing is set up,
// and the server runs uninstrumented; a protocol the server does not
// export is refused with the variable's name.
func TestTelemetrySettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		traces  bool // spans exported
		metrics bool // metrics exported
		wantErr string
	}{
		{name: "unset", env: map[string]string{}},
		{name: "disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "traces endpoint only", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true, traces: true},
		{name: "metrics endpoint only", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4318/v1/metrics"}, on: true, metrics: true},
		{name: "both", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true, traces: true, metrics: true},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="grpc": this server exports OTLP over HTTP only`},
		{name: "metrics over json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"},
			wantErr: `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http/json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The exporters read the process environment: they export to a
			// local collector when shut down.
			cs := httptest.NewServer(&collector{spans: map[string]int{}, metrics: map[string]int{}})
			defer cs.Close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", cs.URL)
			tel, err := startTelemetry(context.Background(), func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.on, tel != nil)
			if tel != nil {
				assert.Equal(t, tc.traces, tel.tp != nil, "spans exported")
				assert.Equal(t, tc.metrics, tel.mp != nil, "metrics exported")
			}
			so := &mcp.ServerOptions{}
			tel.instrument(so)
			assert.Len(t, so.Middleware, map[bool]int{false: 0, true: 1}[tc.on])
			require.NoError(t, tel.shutdown(context.Background()))
		})
	}
}
