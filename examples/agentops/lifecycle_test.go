package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
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
)

type sleepResult struct {
	out SleepOutput
	err error
}

// startSleep calls test_sleep for ms milliseconds in the background and
// returns once the call holds a concurrency slot (health, itself running
// through the same limiter, counts two calls).
func startSleep(t *testing.T, c *mcp.Client, ms int) <-chan sleepResult {
	t.Helper()
	done := make(chan sleepResult, 1)
	go func() {
		res, err := c.CallTool(context.Background(), "test_sleep", obj{"ms": ms})
		var r sleepResult
		r.err = err
		if err == nil {
			r.err = json.Unmarshal(res.StructuredContent, &r.out)
		}
		done <- r
	}()
	require.Eventually(t, func() bool {
		return call[middleware.HealthReport](t, c, "health", obj{}).Resources.ConcurrentExecutions >= 2
	}, 20*time.Second, 5*time.Millisecond, "test_sleep is in flight")
	return done
}

// shutdownTool returns the definition of shutdown as tools/list shows it.
func shutdownTool(t *testing.T, c *mcp.Client) *mcp.Tool {
	t.Helper()
	tools, err := c.ListAllTools(context.Background())
	require.NoError(t, err)
	for _, tl := range tools {
		if tl.Name == "shutdown" {
			return tl
		}
	}
	return nil
}

// Over the real stdio transport, with admin policy local_stdio_only, the
// client that launched the server sees shutdown (destructive) and the
// admin registration tools. A slow call in flight when shutdown is called
// still gets its answer; then the process exits by itself, with status 0.
func TestShutdownDrainsOverStdio(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, ct, stderr := exampletest.Start(t, []string{
		"KEEL_MODE=TEST",
		"KEEL_TOOLS_ADMIN_POLICY_MODE=local_stdio_only",
		"KEEL_TOOLS_ADMIN_REGISTRATION_ENABLED=true",
		"KEEL_SECURITY_DYNAMIC_REGISTRATION_ENABLED=true",
	}, "-db", filepath.Join(t.TempDir(), "ops.db"))

	def := shutdownTool(t, c)
	require.NotNil(t, def, "shutdown is listed for the local stdio client")
	require.NotNil(t, def.Annotations)
	require.NotNil(t, def.Annotations.DestructiveHint)
	assert.True(t, *def.Annotations.DestructiveHint)

	// Gated admin registration: a tool of a predefined type, at run time.
	names := toolNames(t, c)
	assert.Contains(t, names, middleware.AdminRegisterToolName)
	call[middleware.RegisterToolResult](t, c, middleware.AdminRegisterToolName,
		obj{"name": "echo_again", "description": "Echoes.", "toolType": "echo"})
	res, err := c.CallTool(ctx, "echo_again", obj{"message": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content[0].Text)

	slow := startSleep(t, c, 1500)
	out := call[ShutdownOutput](t, c, "shutdown", obj{"reason": "test"})
	assert.Equal(t, ShutdownOutput{Stopping: true, DrainTimeoutMs: 10_000}, out)
	select {
	case r := <-slow:
		require.NoError(t, r.err, "the call in flight is answered")
		assert.Equal(t, 1500, r.out.SleptMs)
	case <-time.After(20 * time.Second):
		t.Fatalf("the call in flight got no answer; stderr:\n%s", stderr)
	}
	require.Eventually(t, func() bool { return ct.Process().Signal(syscall.Signal(0)) != nil },
		20*time.Second, 10*time.Millisecond, "the process exits by itself; stderr:\n%s", stderr)
	_, err = c.CallTool(ctx, "server_ping", obj{})
	assert.Error(t, err, "the connection is closed")
	assert.Contains(t, stderr.String(), "shutdown requested")
}

// shutdown is admin-gated: deny_all (the default) refuses it everywhere;
// local_stdio_only refuses it in memory and through a socket speaking the
// stdio framing (it would be bypassable otherwise). Refused, it is not
// listed, a call gets UNAUTHORIZED, and the server keeps serving.
func TestShutdownGate(t *testing.T) {
	t.Parallel()
	netStream := func() (transport.Transport, transport.Transport) {
		sc, cc := net.Pipe()
		return transport.NewStdioStreams(sc, sc, nil), transport.NewStdioStreams(cc, cc, nil)
	}
	memory := func() (transport.Transport, transport.Transport) {
		ct, st := transport.NewPipe(nil)
		return st, ct
	}
	tests := []struct {
		name   string
		policy keel.AdminPolicyMode
		pair   func() (server, client transport.Transport)
		reason string
	}{
		{"deny_all in memory", keel.AdminDenyAll, memory, "disabled"},
		{"deny_all over a socket", keel.AdminDenyAll, netStream, "disabled"},
		{"local_stdio_only in memory", keel.AdminLocalStdioOnly, memory, "transport"},
		{"local_stdio_only over a socket", keel.AdminLocalStdioOnly, netStream, "transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := defaults()
			cfg.Tools.AdminPolicy.Mode = tt.policy
			st, ct := tt.pair()
			_, done := serveApp(t, cfg, st)
			c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
			require.NoError(t, c.Connect(context.Background(), ct))
			t.Cleanup(func() { c.Close() })

			assert.Nil(t, shutdownTool(t, c), "not listed")
			se := callErr(t, c, "shutdown", obj{})
			assert.Equal(t, mcp.ErrUnauthorized, se.Code)
			assert.Equal(t, tt.reason, se.Details["reason"])
			if tt.reason == "transport" {
				assert.Contains(t, []any{transport.KindStream, "memory"}, se.Details["transport"])
			}
			call[middleware.PingResult](t, c, "server_ping", obj{})
			select {
			case err := <-done:
				t.Fatalf("the server stopped: %v", err)
			default:
			}
		})
	}
}

// In process, with the token admin policy: shutdown called with the token
// while a slow call is in flight; the slow call is answered, then serve
// returns nil, and the connection is closed.
func TestShutdownDrainsInProcess(t *testing.T) {
	t.Setenv("AGENTOPS_TEST_ADMIN_TOKEN", "tok-123")
	cfg := defaults()
	cfg.Mode = keel.ModeTest
	cfg.Tools.AdminPolicy = keel.AdminPolicy{Mode: keel.AdminToken, TokenEnvVar: "AGENTOPS_TEST_ADMIN_TOKEN"}
	c, done := connectApp(t, cfg)
	ctx := context.Background()

	se := callErr(t, c, "shutdown", obj{})
	assert.Equal(t, "token_missing", se.Details["reason"])

	slow := startSleep(t, c, 800)
	res, err := c.CallToolWithParams(ctx, &mcp.CallToolParams{Name: "shutdown", Arguments: []byte(`{"reason":"maintenance"}`),
		Meta: mcp.Meta{middleware.MetaAdminToken: "tok-123"}})
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(res.StructuredContent), `"stopping":true`), string(res.StructuredContent))
	select {
	case err := <-done:
		t.Fatalf("serve returned (%v) while a call was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	select {
	case r := <-slow:
		require.NoError(t, r.err, "the call in flight is answered")
		assert.Equal(t, 800, r.out.SleptMs)
	case <-time.After(20 * time.Second):
		t.Fatal("the call in flight got no answer")
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after the drain")
	}
	_, err = c.CallTool(ctx, "server_ping", obj{})
	assert.Error(t, err, "the connection is closed")
}

// A signal (the context of serve ending) stops the server the same
// graceful way: the call in flight is answered before serve returns.
func TestStopOnSignalDrains(t *testing.T) {
	t.Parallel()
	cfg := defaults()
	cfg.Mode = keel.ModeTest
	clientEnd, serverEnd := transport.NewPipe(nil)
	ctx, cancel := context.WithCancel(context.Background())
	store, err := openStore(ctx, filepath.Join(t.TempDir(), "agentops.db"), "")
	require.NoError(t, err)
	a, err := newApp(store, cfg, quiet)
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()
	done := make(chan error, 1)
	go func() { done <- a.serve(ctx, serverEnd) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
	require.NoError(t, c.Connect(context.Background(), clientEnd))
	defer c.Close()

	slow := startSleep(t, c, 500)
	cancel() // as SIGTERM does in main
	r := <-slow
	require.NoError(t, r.err, "the call in flight is answered")
	assert.Equal(t, 500, r.out.SleptMs)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return")
	}
}
