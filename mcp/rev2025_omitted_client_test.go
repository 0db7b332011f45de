//go:build keel_omit2025

package mcp_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// TestOmit2025ClientRefuses2025 runs with the build tag keel_omit2025: a
// Client told to speak a 2025 revision (or any other than 2026-07-28)
// fails at Connect with an error matching ErrNeedsVersion20260728 that
// names the setting, and sends nothing.
func TestOmit2025ClientRefuses2025(t *testing.T) {
	for _, v := range []string{mcp.Version20251125, mcp.Version20250618, mcp.Version20250326, mcp.Version20241105, "1999-01-01"} {
		t.Run(v, func(t *testing.T) {
			ct, st := transport.NewPipe(nil)
			c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: v, Logger: slog.New(slog.DiscardHandler)})
			err := c.Connect(context.Background(), ct)
			require.ErrorIs(t, err, mcp.ErrNeedsVersion20260728)
			assert.ErrorContains(t, err, "ClientOptions.ProtocolVersion")
			assert.ErrorContains(t, err, v)
			assert.ErrorContains(t, err, "keel_omit2025")
			assert.Empty(t, c.ProtocolVersion(), "not connected")
			rctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, rerr := st.Read(rctx)
			assert.Error(t, rerr, "nothing was sent")
			assert.NoError(t, c.Close())
		})
	}
}

// TestOmit2025ClientHas2025MethodsAsRefusals runs with the build tag
// keel_omit2025: the Client methods of the 2025 methods exist (a program
// builds either way) and refuse without sending, also before Connect.
func TestOmit2025ClientHas2025MethodsAsRefusals(t *testing.T) {
	c := mcp.NewClient(nil)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Ping":            func() error { return c.Ping(ctx) },
		"SetLoggingLevel": func() error { return c.SetLoggingLevel(ctx, "debug") },
		"Subscribe":       func() error { return c.Subscribe(ctx, "file:///a") },
		"Unsubscribe":     func() error { return c.Unsubscribe(ctx, "file:///a") },
		"CallToolAsTask":  func() error { _, err := c.CallToolAsTask(ctx, "t", nil, time.Second); return err },
		"TaskResult":      func() error { _, err := c.TaskResult(ctx, "t1"); return err },
		"ListTasks":       func() error { _, err := c.ListTasks(ctx, ""); return err },
		"ListAllTasks":    func() error { _, err := c.ListAllTasks(ctx); return err },
	} {
		assert.ErrorIs(t, call(), mcp.ErrMethodRemoved, name)
	}
	_, err := c.GetTask(ctx, "t1")
	assert.ErrorContains(t, err, "PollTask")
	assert.ErrorIs(t, c.SetRoots(ctx, nil), mcp.ErrCapabilityNotDeclared)
	roots := mcp.NewClient(&mcp.ClientOptions{Roots: []mcp.Root{}})
	require.NoError(t, roots.SetRoots(ctx, []mcp.Root{{URI: "file:///b"}}), "a 2026-07-28 client tells the server nothing")
	assert.Equal(t, []mcp.Root{{URI: "file:///b"}}, roots.Roots())
}
