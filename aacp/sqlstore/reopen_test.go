package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
)

// TestWindowReopenDeliversRefusedAtOnce: a receive window that refused
// messages for lack of room (a slow handler holds a gap open while later
// messages complete) claims them again as soon as the gap closes, not at
// their retransmission time. Every event completes well before
// RetransmitTimeout, on every store.
func TestWindowReopenDeliversRefusedAtOnce(t *testing.T) {
	stores := map[string]func(t *testing.T) aacp.Store{
		"memory": func(*testing.T) aacp.Store { return aacp.NewMemoryStore() },
		"sqlite": func(t *testing.T) aacp.Store {
			s, err := sqlstore.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			const events, window = 100, 8
			release := make(chan struct{})
			var completed atomic.Int64
			all := make(chan struct{})
			mux := aacp.NewMux()
			started := make(chan struct{})
			mux.HandleFunc("worker", func(ctx context.Context, env *aacp.Envelope) (any, error) {
				if env.Seq == 1 { // holds the first seq open: a gap
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return nil, nil
			})
			store := open(t)
			n := aacp.New(store, mux, &aacp.Options{Logger: quiet, MaxWindow: window, MaxBackground: 4 * events,
				RetransmitTimeout: 30 * time.Second, PollInterval: 10 * time.Millisecond,
				OnMessageCompleted: func(*aacp.Envelope, *aacp.Resolution) {
					if completed.Add(1) == events {
						close(all)
					}
				}})
			ctx := context.Background()
			require.NoError(t, n.Start(ctx))
			defer n.Close(ctx)
			var once sync.Once
			defer once.Do(func() { close(release) })
			refusing := false
			for i := range events {
				_, err := n.SendReliable(ctx, "producer", "worker", jsontext.Value(fmt.Sprintf(`{"n":%d}`, i)))
				require.NoError(t, err)
				if i == 0 {
					<-started
				}
				// Each one completes (marked above the gap) until the
				// window is full; from then on they are refused.
				for d := time.Now().Add(200 * time.Millisecond); !refusing && completed.Load() < int64(i); {
					if time.Now().After(d) {
						refusing = true
					}
					time.Sleep(time.Millisecond)
				}
			}
			require.True(t, refusing, "the window refused nothing (%d completed)", completed.Load())
			require.Less(t, completed.Load(), int64(events), "the window refused nothing")
			once.Do(func() { close(release) })
			select {
			case <-all:
			case <-time.After(5 * time.Second): // RetransmitTimeout is 30s
				t.Fatalf("%d of %d events completed 5s after the gap closed", completed.Load(), events)
			}
		})
	}
}
