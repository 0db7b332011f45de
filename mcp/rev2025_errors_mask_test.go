//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

const secretDSN = "postgres://app:hunter2@db.internal:5432/prod"

// maskServer serves a tool and a resource that fail with a plain error
// holding a secret, and a tool that fails with a typed one.
func maskServer(t *testing.T, expose bool, logs *exampletest.SafeBuffer) *mcp.Client {
	t.Helper()
	reg := registry.New(nil)
	fail := func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
		return nil, errors.New("connect " + secretDSN + ": refused")
	}
	typed := func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
		return nil, mcp.NewToolError(mcp.ErrInvalidInput, "the name is taken", nil)
	}
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "fail", InputSchema: []byte(`{"type":"object"}`)}, fail, nil))
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "typed", InputSchema: []byte(`{"type":"object"}`)}, typed, nil))
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "closed", InputSchema: []byte(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("db %s: %w", secretDSN, mcp.ErrClosed)
		}, nil))
	require.NoError(t, reg.AddResource(&mcp.Resource{URI: "test://broken", Name: "broken"},
		func(context.Context, string) ([]mcp.ResourceContents, error) {
			return nil, errors.New("open /srv/secret/config.yaml with " + secretDSN)
		}))
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Resources: reg, ExposeErrorText: expose,
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	ct, st := transport.NewPipe(nil)
	go func() { _ = srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, ct))
	t.Cleanup(func() { c.Close() })
	return c
}

// A handler's plain error reaches the client as INTERNAL "internal
// error", retryable, with the correlation id; its text goes to the log.
// Typed errors pass as written; ExposeErrorText shows the text.
func TestPlainErrorTextIsMasked(t *testing.T) {
	ctx := context.Background()
	var logs exampletest.SafeBuffer
	c := maskServer(t, false, &logs)

	_, err := c.CallTool(ctx, "fail", nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.True(t, se.Retryable)
	assert.NotEmpty(t, se.CorrelationID)
	assert.NotContains(t, se.Message, "hunter2")
	assert.Contains(t, logs.String(), "hunter2", "the text goes to the log")
	assert.Contains(t, logs.String(), se.CorrelationID, "under the call's correlation id")

	// An error wrapping one of keel's sentinels about the client's side:
	// the sentinel's own text only, never what was wrapped around it.
	_, err = c.CallTool(ctx, "closed", nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrClosed.Error(), se.Message)
	assert.Contains(t, logs.String(), "db postgres://", "the whole text goes to the log")

	_, err = c.CallTool(ctx, "typed", nil)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInvalidInput, se.Code)
	assert.Equal(t, "the name is taken", se.Message)

	_, err = c.ReadResource(ctx, "test://broken")
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(mcp.CodeInternalError), e.Code)
	assert.NotContains(t, e.Message, "hunter2")
	assert.NotContains(t, e.Message, "/srv/secret")
	rse, ok := e.StructuredError()
	require.True(t, ok)
	assert.Equal(t, mcp.ErrInternal, rse.Code)
	assert.NotEmpty(t, rse.CorrelationID)
	assert.NotContains(t, rse.Message, "hunter2")

	var open exampletest.SafeBuffer
	dev := maskServer(t, true, &open)
	_, err = dev.CallTool(ctx, "fail", nil)
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Message, "hunter2", "ExposeErrorText: the text as it is")
}

// A client name of a million newlines makes no huge log line: peer values
// are clipped.
func TestPeerValuesAreClippedInTheLog(t *testing.T) {
	var logs exampletest.SafeBuffer
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	ct, st := transport.NewPipe(&transport.PipeOptions{MaxMessageBytes: 8 << 20})
	go func() { _ = srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler), Name: strings.Repeat("\n", 1<<20), Version: "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, ct))
	defer c.Close()
	assert.Contains(t, logs.String(), "mcp: initialize")
	assert.Less(t, len(logs.String()), 4096, "bytes of log for one initialize")
}

// The log lines one session causes are rate-limited at every level, and a
// panic's stack is clipped: 50 panicking calls write at most
// LogLinesPerSecond lines, each bounded, and one line counting the rest.
func TestSessionLogLinesRateLimited(t *testing.T) {
	var logs exampletest.SafeBuffer
	reg := registry.New(nil)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "panic", InputSchema: []byte(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			panic(strings.Repeat("p", 1<<20))
		}, nil))
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, LogLinesPerSecond: 10,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ct, st := transport.NewPipe(nil)
	go func() { _ = srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, ct))
	defer c.Close()
	start := time.Now()
	for range 50 {
		_, err := c.CallTool(ctx, "panic", nil)
		require.Error(t, err)
	}
	// Each call logs 2 lines: 100 without the limit; with it, a burst of
	// 10 and 10 a second after it, and lines of the server's own scope.
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	assert.LessOrEqual(t, len(lines), 13+int(10*time.Since(start).Seconds()))
	for _, l := range lines {
		assert.Less(t, len(l), 8<<10, "every value is clipped")
	}
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"suppressed"`) }, 3*time.Second, 10*time.Millisecond)
}

// The sessions of one peer share one log budget: ten sessions from one
// address, each calling a panicking tool, write no more lines than one
// session would, and a session of another address still logs.
func TestPeerSessionsShareOneLogBudget(t *testing.T) {
	var logs exampletest.SafeBuffer
	reg := registry.New(nil)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "panic", InputSchema: []byte(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			panic("boom")
		}, nil))
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, LogLinesPerSecond: 10,
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	connect := func(addr string) *mcp.Client {
		ct, st := transport.NewPipe(nil)
		peerCtx := transport.WithPeer(ctx, transport.PeerOfAddr(netip.MustParseAddr(addr)))
		go func() { _ = srv.Run(peerCtx, st) }()
		c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, c.Connect(ctx, ct))
		t.Cleanup(func() { c.Close() })
		return c
	}
	start := time.Now()
	for range 10 {
		c := connect("127.0.0.2")
		for range 5 {
			_, err := c.CallTool(ctx, "panic", nil)
			require.Error(t, err)
		}
	}
	greedy := strings.Count(logs.String(), `"connectionCorrelationId"`)
	// 10 sessions × 5 calls × 2 lines = 100 lines (plus each session's
	// initialize line) without a shared budget; with it, a burst of 10
	// and 10 a second while the loop ran.
	assert.LessOrEqual(t, greedy, 11+int(10*time.Since(start).Seconds()), "one peer's sessions share one budget")
	polite := connect("127.0.0.3")
	_, err := polite.CallTool(ctx, "panic", nil)
	require.Error(t, err)
	assert.Greater(t, strings.Count(logs.String(), `"connectionCorrelationId"`), greedy, "another peer still logs")
}
