//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// Quick calls run on the reading goroutine; a call that runs longer than
// InlineBudget hands reading over, so it never holds up the connection and
// slow calls still run concurrently. Both settings (inline, and a goroutine
// per call) must behave the same from the client's side.
func TestSlowCallsDoNotBlockTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget time.Duration
	}{
		{"inline with takeover", 0},
		{"tiny budget", time.Nanosecond},
		{"goroutine per call", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := mcptest.NewTools(mcptest.ToolEcho, mcptest.ToolSlow)
			tools.SlowStarted = make(chan *mcp.ToolCall, 4)
			tools.SlowDone = make(chan error, 4)
			opts := mcptest.ServerOptions(tools)
			opts.InlineBudget = tc.budget
			ct, wait := mcptest.StartServer(t, opts, nil)
			c := mcp.NewClient(nil)
			ctx := context.Background()
			require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, ct)))

			// Two slow calls in flight at once: both handlers run concurrently.
			slowCtx, cancelSlow := context.WithCancel(ctx)
			errs := make(chan error, 2)
			for range 2 {
				go func() {
					_, err := c.CallTool(slowCtx, mcptest.ToolSlow, nil)
					errs <- err
				}()
			}
			for range 2 {
				select {
				case <-tools.SlowStarted:
				case <-time.After(5 * time.Second):
					t.Fatal("slow calls did not both start: reading was blocked")
				}
			}
			// The connection still serves other requests meanwhile.
			res, err := c.CallTool(ctx, mcptest.ToolEcho, map[string]any{"message": "still here"})
			require.NoError(t, err)
			require.Equal(t, "still here", res.Content[0].Text)
			require.NoError(t, c.Ping(ctx))

			// Cancelling the callers cancels both handlers; no response follows.
			cancelSlow()
			for range 2 {
				require.ErrorIs(t, <-errs, context.Canceled)
				require.ErrorIs(t, <-tools.SlowDone, context.Canceled)
			}
			res, err = c.CallTool(ctx, mcptest.ToolEcho, map[string]any{"message": "after"})
			require.NoError(t, err)
			require.Equal(t, "after", res.Content[0].Text)
			require.NoError(t, c.Close())
			require.NoError(t, wait())
		})
	}
}
