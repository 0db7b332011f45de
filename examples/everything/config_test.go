package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// callJSON calls a tool without arguments and decodes its structured result.
func callJSON[T any](t *testing.T, c *mcp.Client, name string) T {
	t.Helper()
	res, err := c.CallTool(context.Background(), name, map[string]any{})
	require.NoError(t, err, name)
	var out T
	require.NoError(t, json.Unmarshal(res.StructuredContent, &out), name)
	return out
}

// The process reads the file named by -config, then KEEL_* variables over
// it, and reports the result through health and server_ping over stdio.
func TestConfigFileAndEnvironment(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "everything.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
		"server": {"name": "everything-from-file", "version": "1.0.0"},
		"tools": {"defaultTimeoutMs": 2500},
		"resources": {"maxConcurrentExecutions": 4}
	}`), 0o600))
	c, ct, _ := exampletest.Start(t, []string{"KEEL_SERVER_VERSION=3.0.0-env", "KEEL_MODE=MINIMAL"}, "-config", file)
	require.Equal(t, transport.KindStdio, ct.Kind())
	info := c.InitializeResult().ServerInfo
	assert.Equal(t, "everything-from-file", info.Name, "from the file")
	assert.Equal(t, "3.0.0-env", info.Version, "the environment overrides the file")

	health := callJSON[middleware.HealthReport](t, c, "health")
	assert.Equal(t, middleware.HealthServer{Name: "everything-from-file", Version: "3.0.0-env"}, health.Server)
	assert.Equal(t, int64(2500), health.Config.ToolTimeoutMs)
	assert.Equal(t, 4, health.Config.MaxConcurrentExecutions)
	assert.Equal(t, keel.DefaultConfig().Tools.MaxPayloadBytes, health.Config.MaxPayloadBytes)

	ping := callJSON[middleware.PingResult](t, c, "server_ping")
	assert.Equal(t, middleware.PingResult{Version: "3.0.0-env", Mode: middleware.ModeMinimal, UptimeMs: ping.UptimeMs}, ping)

	_, err := c.CallTool(context.Background(), "test_simple_text", nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se, "MINIMAL hides the fixtures")
	assert.Equal(t, mcp.ErrNotFound, se.Code)
}

// An invalid value stops the process with status 2 and a message naming
// the field and where it came from, whatever the transport flags say.
func TestConfigInvalid(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"server": {"shutdownTimeoutMs": "soon"}}`), 0o600))
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"negative timeout", []string{"KEEL_TOOLS_DEFAULT_TIMEOUT_MS=-5"}, []string{"-http", "127.0.0.1:0"},
			[]string{"everything: config: tools.defaultTimeoutMs (KEEL_TOOLS_DEFAULT_TIMEOUT_MS): must be > 0 (got -5)"}},
		{"zero slots", []string{"KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS=0"}, nil,
			[]string{"resources.maxConcurrentExecutions (KEEL_RESOURCES_MAX_CONCURRENT_EXECUTIONS): must be > 0 (got 0)"}},
		{"wrong type in the file", nil, []string{"-config", bad, "-stateless"},
			[]string{bad, "server.shutdownTimeoutMs: cannot use JSON string"}},
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

var urlLog = regexp.MustCompile(`"url":"(http://[^"]+/mcp)"`)

// -http and -stateless start with no configuration file at all (as the
// conformance script runs the server), serve health and server_ping, and
// stop cleanly on SIGTERM.
func TestHTTPStartsWithDefaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"stateful", []string{"-http", "127.0.0.1:0"}},
		{"stateless", []string{"-http", "127.0.0.1:0", "-stateless"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd, stderr := exampletest.Command(t, nil, tt.args...)
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			var url string
			require.Eventually(t, func() bool {
				m := urlLog.FindStringSubmatch(stderr.String())
				if m != nil {
					url = m[1]
				}
				return m != nil
			}, 30*time.Second, 10*time.Millisecond, "the server logs its URL; stderr:\n%s", stderr)

			ctx := context.Background()
			c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
			require.NoError(t, c.Connect(ctx, streamhttp.NewClientTransport(url, &streamhttp.ClientOptions{Logger: quiet})))
			info := c.InitializeResult().ServerInfo
			assert.Equal(t, "keel-everything", info.Name)
			assert.Equal(t, "1.0.0", info.Version)
			health := callJSON[middleware.HealthReport](t, c, "health")
			assert.Equal(t, middleware.HealthServer{Name: "keel-everything", Version: "1.0.0"}, health.Server)
			assert.Equal(t, int64(30_000), health.Config.ToolTimeoutMs)
			assert.Equal(t, 10, health.Config.MaxConcurrentExecutions)
			ping := callJSON[middleware.PingResult](t, c, "server_ping")
			assert.Equal(t, middleware.ModeFull, ping.Mode)
			res, err := c.CallTool(ctx, "test_simple_text", nil)
			require.NoError(t, err)
			assert.Equal(t, "This is a simple text response for testing.", res.Content[0].Text)
			require.NoError(t, c.Close())

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				require.NoError(t, err, "stderr:\n%s", stderr)
			case <-time.After(20 * time.Second):
				t.Fatalf("the server did not exit after SIGTERM; stderr:\n%s", stderr)
			}
		})
	}
}

// In process: the fixture server has health and server_ping with the
// default configuration, and every fixture tool is still listed.
func TestHealthAndPing(t *testing.T) {
	c, reg := connect(t, nil)
	ctx := context.Background()
	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	assert.Contains(t, names, "health")
	assert.Contains(t, names, "server_ping")
	assert.Len(t, names, len(reg.Tools()), "FULL lists every tool")
	health := callJSON[middleware.HealthReport](t, c, "health")
	assert.Equal(t, "keel-everything", health.Server.Name)
	ping := callJSON[middleware.PingResult](t, c, "server_ping")
	assert.Equal(t, middleware.PingResult{Version: "1.0.0", Mode: middleware.ModeFull, UptimeMs: ping.UptimeMs}, ping)
}

// startReplica serves cfg over stateless HTTP on a fresh port, as one
// replica behind a load balancer, until the test ends; it returns the URL.
func startReplica(t *testing.T, cfg keel.Config) string {
	t.Helper()
	srv, err := configuredServer(cfg, newRegistry(quiet), quiet)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, srv, ln, &streamhttp.Options{Stateless: true}) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// Replicas configured with the same server.stateKey open each other's
// requestStates: a client answers an input-required result on another
// replica. A replica with another key (here none: a random one) refuses it.
func TestStateKeySharedByReplicas(t *testing.T) {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString(key)
	shared, err := loadConfig("", func(k string) string {
		if k == "KEEL_SERVER_STATE_KEY" {
			return b64
		}
		return ""
	})
	require.NoError(t, err)
	replicaA, replicaB := startReplica(t, shared), startReplica(t, shared)
	stranger := startReplica(t, defaults())

	const tool = "test_input_required_result_request_state"
	call := `"name":"` + tool + `","arguments":{}`
	round1 := statelessPost(t, replicaA, "tools/call", tool, call)
	res, ok := round1["result"].(map[string]any)
	require.True(t, ok, "want a result, got %v", round1)
	require.Equal(t, "input_required", res["resultType"])
	state, _ := res["requestState"].(string)
	require.NotEmpty(t, state)
	answer := call + `,"inputResponses":{"` + keyConfirm + `":{"action":"accept","content":{"ok":true}}},"requestState":"` + state + `"`

	round2 := statelessPost(t, replicaB, "tools/call", tool, answer)
	res, ok = round2["result"].(map[string]any)
	require.True(t, ok, "want a result, got %v", round2)
	assert.Contains(t, fmt.Sprint(res["content"]), "state-ok", "replica B opens the state replica A sealed")

	refused := statelessPost(t, stranger, "tools/call", tool, answer)
	rerr, ok := refused["error"].(map[string]any)
	require.True(t, ok, "a replica with another key cannot open it; got %v", refused)
	assert.Equal(t, float64(mcp.CodeInvalidParams), rerr["code"])
}

// An invalid state key stops the process with status 2 and a message
// naming the field and the variable, never showing the value.
func TestStateKeyInvalid(t *testing.T) {
	t.Parallel()
	short := base64.StdEncoding.EncodeToString([]byte("too-short-secret"))
	for _, tt := range []struct{ name, value, want string }{
		{"too short", short, "decodes to 16 bytes, too short"},
		{"not base64", "correct horse battery staple, a password", "is not standard base64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stderr := exampletest.Fail(t, []string{"KEEL_SERVER_STATE_KEY=" + tt.value}, "-http", "127.0.0.1:0", "-stateless")
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, "everything: config: server.stateKey (KEEL_SERVER_STATE_KEY): must be standard base64")
			assert.Contains(t, stderr, tt.want)
			assert.NotContains(t, stderr, tt.value)
			assert.NotContains(t, stderr, "horse")
		})
	}
}
