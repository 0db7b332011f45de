package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/transport"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// connect serves the echo server configured by cfg (nil = defaults) over
// the in-memory transport and returns a connected Client.
func connect(tb testing.TB, cfg *keel.Config) *mcp.Client {
	tb.Helper()
	ctx := context.Background()
	c0 := defaults()
	if cfg != nil {
		c0 = *cfg
	}
	srv, err := newServer(c0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(tb, err)
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverEnd) }()
	c := mcp.NewClient(nil)
	require.NoError(tb, c.Connect(ctx, clientEnd))
	tb.Cleanup(func() {
		require.NoError(tb, c.Close())
		require.NoError(tb, <-done)
	})
	return c
}

func TestEcho(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	for _, msg := range []string{"hello", "", "ünïcødé ✓", "line\nbreak"} {
		res, err := c.CallTool(ctx, "echo", map[string]any{"message": msg})
		require.NoError(t, err)
		require.Len(t, res.Content, 1, "exactly one content block")
		require.Equal(t, mcp.ContentText, res.Content[0].Type)
		require.Equal(t, msg, res.Content[0].Text)
		require.Nil(t, res.StructuredContent)
	}
	_, err := c.CallTool(ctx, "echo", map[string]any{})
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se, "message is required")
	require.Equal(t, mcp.ErrInvalidArgument, se.Code)
}

// The process reads its configuration the documented way: the file named
// by -config (or $KEEL_CONFIG), then KEEL_* variables over it; health and
// server_ping report the result over real stdio.
func TestConfigFileAndEnvironment(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "echo.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
		"server": {"name": "echo-from-file", "version": "1.0.0"},
		"tools": {"defaultTimeoutMs": 1500, "maxPayloadBytes": 4096},
		"resources": {"maxConcurrentExecutions": 3}
	}`), 0o600))
	env := []string{"KEEL_SERVER_VERSION=2.0.0-env", "KEEL_MODE=TEST"}
	for _, how := range []struct {
		name string
		env  []string
		args []string
	}{
		{"-config", env, []string{"-config", file}},
		{"KEEL_CONFIG", append(slices.Clone(env), "KEEL_CONFIG="+file), nil},
	} {
		t.Run(how.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, ct, _ := exampletest.Start(t, how.env, how.args...)
			require.Equal(t, transport.KindStdio, ct.Kind())
			info := c.InitializeResult().ServerInfo
			assert.Equal(t, "echo-from-file", info.Name, "from the file")
			assert.Equal(t, "2.0.0-env", info.Version, "the environment overrides the file")

			health := callJSON[middleware.HealthReport](t, c, "health")
			assert.Equal(t, middleware.HealthServer{Name: "echo-from-file", Version: "2.0.0-env"}, health.Server)
			assert.Equal(t, middleware.HealthConfig{ToolTimeoutMs: 1500, MaxConcurrentExecutions: 3, MaxPayloadBytes: 4096,
				MaxStateBytes: keel.DefaultConfig().Tools.MaxStateBytes}, health.Config)
			assert.Equal(t, 3, health.Resources.MaxConcurrentExecutions)
			assert.Contains(t, []middleware.HealthStatus{middleware.StatusHealthy, middleware.StatusDegraded}, health.Status)

			ping := callJSON[middleware.PingResult](t, c, "server_ping")
			assert.Equal(t, "2.0.0-env", ping.Version)
			assert.Equal(t, middleware.ModeTest, ping.Mode)
			assert.GreaterOrEqual(t, ping.UptimeMs, int64(0))

			res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hi"})
			require.NoError(t, err)
			assert.Equal(t, "hi", res.Content[0].Text)
			_, err = c.CallTool(ctx, "echo", map[string]any{"message": strings.Repeat("x", 5000)})
			var se *mcp.StructuredError
			require.ErrorAs(t, err, &se, "maxPayloadBytes from the file is enforced")
			assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
		})
	}
}

// An invalid value stops the process before it serves, with a non-zero
// status and a message naming the field and where it came from.
func TestConfigInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"tools": {"defaultTimeoutMs": 1000, "maxPayloadByte": 10}}`), 0o600))
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"negative timeout", []string{"KEEL_TOOLS_DEFAULT_TIMEOUT_MS=-5"}, nil,
			[]string{"echo: config: tools.defaultTimeoutMs (KEEL_TOOLS_DEFAULT_TIMEOUT_MS): must be > 0 (got -5)"}},
		{"not a number", []string{"KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS=many"}, nil,
			[]string{"resources.maxConcurrentExecutions (KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS)"}},
		{"unknown mode", []string{"KEEL_MODE=TURBO"}, nil, []string{"mode (KEEL_MODE): must be one of FULL, READONLY, TEST, MINIMAL"}},
		{"misspelt member in the file", nil, []string{"-config", bad}, []string{bad, "tools.maxPayloadByte: unknown member"}},
		{"missing file", []string{"KEEL_CONFIG=" + filepath.Join(dir, "none.json")}, nil, []string{"none.json", "cannot read"}},
		{"two problems", []string{"KEEL_SERVER_NAME= ", "KEEL_LOGGING_LEVEL=loud"}, nil,
			[]string{"server.name (KEEL_SERVER_NAME): must not be empty", "logging.level (KEEL_LOGGING_LEVEL)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stderr := exampletest.Fail(t, tt.env, tt.args...)
			assert.Equal(t, 2, code)
			for _, w := range tt.want {
				assert.Contains(t, stderr, w)
			}
		})
	}
}

// Modes shape the tool surface: MINIMAL keeps health and server_ping only.
func TestModes(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		mode keel.Mode
		want []string
	}{
		{keel.ModeFull, []string{"echo", "health", "server_ping"}},
		{keel.ModeReadOnly, []string{"echo", "health", "server_ping"}},
		{keel.ModeMinimal, []string{"health", "server_ping"}},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			cfg := defaults()
			cfg.Mode = tt.mode
			c := connect(t, &cfg)
			tools, err := c.ListAllTools(ctx)
			require.NoError(t, err)
			var names []string
			for _, tl := range tools {
				names = append(names, tl.Name)
			}
			assert.Equal(t, tt.want, names)
			ping := callJSON[middleware.PingResult](t, c, "server_ping")
			assert.Equal(t, middleware.Mode(tt.mode), ping.Mode)
		})
	}
}

// callJSON calls a tool without arguments and decodes its structured result.
func callJSON[T any](t *testing.T, c *mcp.Client, name string) T {
	t.Helper()
	res, err := c.CallTool(context.Background(), name, map[string]any{})
	require.NoError(t, err, name)
	var out T
	require.NoError(t, json.Unmarshal(res.StructuredContent, &out), name)
	return out
}

// BenchmarkCallToolInMemory is one tools/call of echo through the Client,
// the in-memory transport, the Server and the standard middleware chain.
func BenchmarkCallToolInMemory(b *testing.B) {
	c := connect(b, nil)
	ctx := context.Background()
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			msg := "hello-" + strconv.Itoa(i)
			res, err := c.CallTool(ctx, "echo", map[string]any{"message": msg})
			if err != nil || res.Content[0].Text != msg {
				b.Fatalf("bad result %v %v", res, err)
			}
		}
	})
	b.Run("par", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hello"})
				if err != nil || res.Content[0].Text != "hello" {
					b.Errorf("bad result %v %v", res, err)
					return
				}
			}
		})
	})
}

// BenchmarkServeLine is the server's side of one tools/call of echo over
// the in-memory transport, written and read as raw lines, in each era: a
// call on an initialized 2025-11-25 session, and a 2026-07-28 call that
// carries its revision and capabilities in _meta. The ratio of the two is
// what the per-request rules cost.
func BenchmarkServeLine(b *testing.B) {
	srv, err := newServer(defaults(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(b, err)
	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	go srv.Run(ctx, serverEnd)
	b.Cleanup(func() { clientEnd.Close() })
	roundTrip := func(line string) []byte {
		if err := clientEnd.Write(ctx, []byte(line)); err != nil {
			b.Fatal(err)
		}
		msg, err := clientEnd.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return msg
	}
	roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	require.NoError(b, clientEnd.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	for _, tc := range []struct{ name, meta string }{
		{"2025-11-25", ``},
		{"2026-07-28", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				msg := roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}` + tc.meta + `}}`)
				if !strings.Contains(string(msg), `"text":"hello"`) {
					b.Fatalf("unexpected answer %s", msg)
				}
			}
		})
	}
}
