//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// muteTransport is a client's end that, once muted, stops answering: it
// either swallows what arrives (a peer that reads but never answers) or
// stops reading at all (a peer that hangs).
type muteTransport struct {
	transport.Transport
	muted   atomic.Bool
	discard bool
	closed  chan struct{}
	once    sync.Once
}

func newMute(t transport.Transport, discard bool) *muteTransport {
	return &muteTransport{Transport: t, discard: discard, closed: make(chan struct{})}
}

func (m *muteTransport) Close() error {
	m.once.Do(func() { close(m.closed) })
	return m.Transport.Close()
}

func (m *muteTransport) Read(ctx context.Context) ([]byte, error) {
	for {
		if m.muted.Load() && !m.discard {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-m.closed:
				return nil, io.EOF
			}
		}
		msg, err := m.Transport.Read(ctx)
		if err != nil || !m.muted.Load() {
			return msg, err
		}
	}
}

func TestServerKeepAliveClosesASilentClient(t *testing.T) {
	const every = 150 * time.Millisecond // a ping must be answered within it, also on a loaded machine under -race
	for _, tt := range []struct {
		name    string
		discard bool
	}{
		{"reads but never answers", true},
		{"stops reading", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
			opts.KeepAlive = every
			ct, wait := mcptest.StartServer(t, opts, nil)
			mt := newMute(ct, tt.discard)
			c := mcp.NewClient(quietClient)
			ctx := context.Background()
			require.NoError(t, c.Connect(ctx, mt))
			t.Cleanup(func() { c.Close() })

			// Answering the pings keeps the connection: several intervals
			// later it still serves calls.
			time.Sleep(5 * every)
			_, err := c.CallTool(ctx, "echo", map[string]any{"message": "alive"})
			require.NoError(t, err)

			mt.muted.Store(true)
			start := time.Now()
			err = wait()
			require.ErrorIs(t, err, mcp.ErrPeerUnresponsive)
			assert.Less(t, time.Since(start), 20*every, "closed within about two intervals")
		})
	}
}

// Without KeepAlive a silent client stays connected: nothing notices.
func TestServerWithoutKeepAliveKeepsASilentClient(t *testing.T) {
	ct, st := transport.NewPipe(nil)
	srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	mt := newMute(ct, true)
	c := mcp.NewClient(quietClient)
	require.NoError(t, c.Connect(context.Background(), mt))
	mt.muted.Store(true)
	select {
	case err := <-done:
		t.Fatalf("Run returned %v without KeepAlive", err)
	case <-time.After(150 * time.Millisecond):
	}
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the client closed")
	}
}

func TestClientKeepAliveClosesASilentServer(t *testing.T) {
	const every = 150 * time.Millisecond // a ping must be answered within it, also on a loaded machine under -race
	ct, st := transport.NewPipe(nil)
	mst := newMute(st, true)
	srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), mst) }()
	copts := *quietClient
	copts.KeepAlive = every
	c := mcp.NewClient(&copts)
	ctx := context.Background()
	require.NoError(t, c.Connect(ctx, ct))

	time.Sleep(5 * every) // an answering server stays connected
	require.NoError(t, c.KeepAliveErr())
	_, err := c.CallTool(ctx, "echo", map[string]any{"message": "alive"})
	require.NoError(t, err)

	mst.muted.Store(true)
	require.Eventually(t, func() bool { return errors.Is(c.KeepAliveErr(), mcp.ErrPeerUnresponsive) }, 2*time.Second, every)
	_, err = c.CallTool(ctx, "echo", map[string]any{"message": "gone"})
	require.Error(t, err, "the connection is closed")
	require.NoError(t, c.Close())
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("server Run did not return")
	}
}
