//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// sessionLog records what Options.OnSession is told.
type sessionLog struct {
	mu      sync.Mutex
	started []string
	ended   map[string]int
}

func (l *sessionLog) onSession(_ context.Context, id string) func(error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started = append(l.started, id)
	return func(error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ended[id]++
	}
}

func (l *sessionLog) snapshot() ([]string, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ended := map[string]int{}
	for k, v := range l.ended {
		ended[k] = v
	}
	return append([]string(nil), l.started...), ended
}

// OnSession hears of each stateful session once when it starts, with its
// Mcp-Session-Id, and once when it ends (DELETE, Shutdown); stateless
// handlers never call it.
func TestOnSession(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stateless bool
	}{{"stateful", false}, {"stateless", true}} {
		t.Run(tc.name, func(t *testing.T) {
			log := &sessionLog{ended: map[string]int{}}
			quiet := slog.New(slog.DiscardHandler)
			srv := mcp.NewServer(&mcp.ServerOptions{Logger: quiet})
			h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Stateless: tc.stateless, OnSession: log.onSession})
			ts := httptest.NewServer(h)
			defer ts.Close()
			ctx := context.Background()

			var ids []string
			clients := make([]*mcp.Client, 2)
			for i := range clients {
				ct := streamhttp.NewClientTransport(ts.URL, nil)
				clients[i] = mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
				require.NoError(t, clients[i].Connect(ctx, ct))
				require.NoError(t, clients[i].Ping(ctx))
				ids = append(ids, ct.SessionID())
			}
			started, ended := log.snapshot()
			if tc.stateless {
				require.NoError(t, clients[0].Close())
				require.NoError(t, clients[1].Close())
				require.NoError(t, h.Close())
				started, ended = log.snapshot()
				assert.Empty(t, started)
				assert.Empty(t, ended)
				return
			}
			assert.Equal(t, ids, started)
			assert.Empty(t, ended, "no session has ended yet")

			require.NoError(t, clients[0].Close()) // DELETE
			require.Eventually(t, func() bool { _, e := log.snapshot(); return e[ids[0]] == 1 }, 5*time.Second, 5*time.Millisecond)
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			require.NoError(t, h.Shutdown(sctx))
			require.NoError(t, clients[1].Close())
			started, ended = log.snapshot()
			assert.Equal(t, ids, started)
			assert.Equal(t, map[string]int{ids[0]: 1, ids[1]: 1}, ended, "each end is reported once, Shutdown's included")
		})
	}
}
