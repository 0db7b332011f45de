package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel"
	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/transport"
)

func TestMain(m *testing.M) { exampletest.Main(m, main) }

// toolNames lists the tools c sees.
func toolNames(t *testing.T, c *mcp.Client) []string {
	t.Helper()
	tools, err := c.ListAllTools(context.Background())
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// serveApp serves a fresh app configured by cfg, on a SQLite store in a
// temporary directory, over st (through serve, as run does) and returns it
// with the channel serve's result arrives on. The app is closed when the
// test ends.
func serveApp(t *testing.T, cfg keel.Config, st transport.Transport) (*app, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := openStore(ctx, filepath.Join(t.TempDir(), "agentops.db"), "")
	require.NoError(t, err)
	a, err := newApp(store, cfg, quiet)
	require.NoError(t, err)
	done := make(chan error, 1)
	served := make(chan error, 1)
	go func() { err := a.serve(ctx, st); done <- err; served <- err }()
	t.Cleanup(func() {
		cancel()
		<-served
		assert.NoError(t, a.Close())
	})
	return a, done
}

// connectApp serves a fresh app configured by cfg over the in-memory
// transport and returns a connected Client.
func connectApp(t *testing.T, cfg keel.Config) (*mcp.Client, <-chan error) {
	t.Helper()
	clientEnd, serverEnd := transport.NewPipe(nil)
	_, done := serveApp(t, cfg, serverEnd)
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
	require.NoError(t, c.Connect(context.Background(), clientEnd))
	t.Cleanup(func() { c.Close() })
	return c, done
}

// The process reads the file named by -config, then KEEL_* variables over
// it; health and server_ping report the result over real stdio.
func TestConfigFileAndEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "agentops.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
		"mode": "READONLY",
		"server": {"name": "ops-from-file", "version": "1.0.0"},
		"tools": {"defaultTimeoutMs": 4000, "maxStateBytes": 1024},
		"resources": {"maxConcurrentExecutions": 5}
	}`), 0o600))
	c, ct, _ := exampletest.Start(t, []string{"KEEL_SERVER_VERSION=7.0.0-env", "KEEL_MODE=TEST"},
		"-config", file, "-db", filepath.Join(dir, "ops.db"))
	require.Equal(t, transport.KindStdio, ct.Kind())
	info := c.InitializeResult().ServerInfo
	assert.Equal(t, "ops-from-file", info.Name, "from the file")
	assert.Equal(t, "7.0.0-env", info.Version, "the environment overrides the file")

	health := call[middleware.HealthReport](t, c, "health", obj{})
	assert.Equal(t, middleware.HealthServer{Name: "ops-from-file", Version: "7.0.0-env"}, health.Server)
	assert.Equal(t, middleware.HealthConfig{ToolTimeoutMs: 4000, MaxConcurrentExecutions: 5,
		MaxPayloadBytes: keel.DefaultConfig().Tools.MaxPayloadBytes, MaxStateBytes: 1024}, health.Config)

	ping := call[middleware.PingResult](t, c, "server_ping", obj{})
	assert.Equal(t, "7.0.0-env", ping.Version)
	assert.Equal(t, middleware.ModeTest, ping.Mode, "KEEL_MODE overrides the file's READONLY")

	names := toolNames(t, c)
	assert.Contains(t, names, "test_sleep", "TEST lists the test-only tools")
	assert.Contains(t, names, "memory_store")
	assert.NotContains(t, names, "shutdown", "admin policy deny_all (the default)")
	call[obj](t, c, "memory_store", obj{"key": "k", "value": obj{"v": 1}})
}

// An invalid value stops the process with status 2, before it opens the
// database, with a message naming the field and where it came from.
func TestConfigInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "ops.db")
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"unknown admin policy", []string{"KEEL_TOOLS_ADMIN_POLICY_MODE=open"},
			[]string{"agentops: config: tools.adminPolicy.mode (KEEL_TOOLS_ADMIN_POLICY_MODE): must be one of deny_all, local_stdio_only, token"}},
		{"token mode without its variable", []string{"KEEL_TOOLS_ADMIN_POLICY_MODE=token"},
			[]string{`tools.adminPolicy.tokenEnvVar: required when tools.adminPolicy.mode is "token"`}},
		{"shutdown timeout", []string{"KEEL_SERVER_SHUTDOWN_TIMEOUT_MS=0"},
			[]string{"server.shutdownTimeoutMs (KEEL_SERVER_SHUTDOWN_TIMEOUT_MS): must be > 0 (got 0)"}},
		{"not a boolean", []string{"KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED=maybe"},
			[]string{"security.dynamicRegistrationEnabled (KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := exampletest.Fail(t, tt.env, "-db", db)
			assert.Equal(t, 2, code)
			for _, w := range tt.want {
				assert.Contains(t, stderr, w)
			}
		})
	}
	_, err := os.Stat(db)
	assert.ErrorIs(t, err, os.ErrNotExist, "the configuration is checked before the database is opened")
}

// Modes shape the tool surface; shutdown stays with the admin policy.
func TestModes(t *testing.T) {
	t.Parallel()
	readOnly := []string{
		"memory_retrieve", "memory_search", "memory_list", "session_status", "session_list",
		"workflow_list", "workflow_describe", "trace_list", "trace_get", "trace_analyze",
		"guard_check", "guard_list", "health", "server_ping",
	}
	tests := []struct {
		mode    keel.Mode
		has     []string
		hasNot  []string
		exactly []string
	}{
		{mode: keel.ModeFull, has: []string{"memory_store", "health"}, hasNot: []string{"test_sleep", "shutdown"}},
		{mode: keel.ModeReadOnly, has: readOnly, hasNot: []string{"memory_store", "memory_delete", "workflow_run", "test_sleep"}},
		{mode: keel.ModeTest, has: []string{"memory_store", "test_sleep"}, hasNot: []string{"shutdown"}},
		{mode: keel.ModeMinimal, exactly: []string{"health", "server_ping"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			cfg := defaults()
			cfg.Mode = tt.mode
			c, _ := connectApp(t, cfg)
			names := toolNames(t, c)
			if tt.exactly != nil {
				assert.Equal(t, tt.exactly, names)
			}
			for _, n := range tt.has {
				assert.Contains(t, names, n)
			}
			for _, n := range tt.hasNot {
				assert.NotContains(t, names, n)
			}
			ping := call[middleware.PingResult](t, c, "server_ping", obj{})
			assert.Equal(t, middleware.Mode(tt.mode), ping.Mode)
			if !slices.Contains(names, "memory_store") {
				_, err := c.CallTool(context.Background(), "memory_store", obj{"key": "k", "value": obj{}})
				var e *mcp.Error
				require.ErrorAs(t, err, &e, "a tool the mode hides does not exist")
				assert.EqualValues(t, mcp.CodeInvalidParams, e.Code)
			}
		})
	}
}
