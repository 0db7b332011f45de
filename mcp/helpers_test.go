package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// connect runs a deterministic test server over a pipe and connects a
// Client to it through a schema-validating transport. The returned function
// closes the client and returns the server's Run result.
func connect(t *testing.T, opts *mcp.ServerOptions, copts *mcp.ClientOptions) (*mcp.Client, func() error) {
	t.Helper()
	ct, wait := mcptest.StartServer(t, opts, nil)
	if copts == nil {
		copts = quietClient
	}
	c := mcp.NewClient(copts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, ct)))
	closed := false
	t.Cleanup(func() {
		if !closed {
			c.Close()
			_ = wait()
		}
	})
	return c, func() error {
		closed = true
		require.NoError(t, c.Close())
		return wait()
	}
}

// connectRecorded is connect with a recorder between the client and the
// schema-validating transport.
func connectRecorded(t *testing.T, opts *mcp.ServerOptions, copts *mcp.ClientOptions) (*mcp.Client, *recorder) {
	t.Helper()
	ct, wait := mcptest.StartServer(t, opts, nil)
	rec := &recorder{Transport: mcptest.ValidateTransport(t, ct)}
	if copts == nil {
		copts = quietClient
	}
	c := mcp.NewClient(copts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, rec))
	t.Cleanup(func() {
		c.Close()
		_ = wait()
	})
	return c, rec
}

// dial runs one more session of srv over a pipe and connects a Client to it.
func dial(t *testing.T, srv *mcp.Server, copts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	ct, st := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	if copts == nil {
		copts = quietClient
	}
	c := mcp.NewClient(copts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, ct)))
	t.Cleanup(func() {
		c.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server Run did not return")
		}
	})
	return c
}

// handlerTools is a ToolSource of tools written inline by a test.
type handlerTools map[string]func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error)

var quietClient = &mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)}

func taskServerOptions(tools mcp.ToolSource, topts *mcp.TaskOptions) *mcp.ServerOptions {
	o := mcptest.ServerOptions(tools)
	if topts == nil {
		topts = &mcp.TaskOptions{}
	}
	o.Tasks = topts
	return o
}

// taskTools is a ToolSource of task-capable tools written inline by a test
// (execution.taskSupport optional).
type taskTools map[string]func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error)

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotNil(t, res)
	require.Len(t, res.Content, 1)
	return res.Content[0].Text
}

// recorder wraps the client's end of a connection and records the method of
// every request and notification the server sent.
type recorder struct {
	transport.Transport
	mu      sync.Mutex
	methods []string
}

func (h handlerTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	var defs []*mcp.Tool
	for name := range h {
		defs = append(defs, &mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	slices.SortFunc(defs, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return defs, nil
}

func (h handlerTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	f, ok := h[call.Name]
	if !ok {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "unknown tool"}
	}
	return f(ctx, call)
}

func (r *recorder) Read(ctx context.Context) ([]byte, error) {
	msg, err := r.Transport.Read(ctx)
	if err == nil {
		var m struct {
			Method string `json:"method"`
		}
		if jsonv2.Unmarshal(msg, &m) == nil && m.Method != "" {
			r.mu.Lock()
			r.methods = append(r.methods, m.Method)
			r.mu.Unlock()
		}
	}
	return msg, err
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.methods)
}

func (h taskTools) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	defs, _ := handlerTools(h).ListTools(ctx)
	for _, d := range defs {
		d.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskOptional}
	}
	return defs, nil
}

func (h taskTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	return handlerTools(h).CallTool(ctx, call)
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// connectRaw runs srv on a new in-memory connection and returns its client
// end, initialized as a 2025-11-25 session when init is set, and with every
// message the server emits checked against the schema when validate is
// (custom methods, which the schema cannot know, are not).
func connectRaw(t *testing.T, srv *mcp.Server, init, validate bool) *rawConn {
	t.Helper()
	ct, st := transport.NewPipe(nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(context.Background(), st) }()
	t.Cleanup(func() { ct.Close(); <-done })
	c := &rawConn{t: t, tr: ct}
	if validate {
		c.tr = mcptest.ValidateTransport(t, ct)
	}
	if init {
		c.send(rawInitLine)
		require.Contains(t, c.recv(), "result")
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return c
}

const rawInitLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
