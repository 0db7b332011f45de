package aacp_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/internal/pgtest"
)

// chaosStore is one store the chaos scenarios run on.
type chaosStore struct {
	name string
	open func(t *testing.T) aacp.Store
}

func chaosStores() []chaosStore {
	return []chaosStore{
		{"memory", func(t *testing.T) aacp.Store { return aacp.NewMemoryStore() }},
		{"sqlite", func(t *testing.T) aacp.Store {
			st, err := sqlstore.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
			require.NoError(t, err)
			return st
		}},
		{"postgres", func(t *testing.T) aacp.Store {
			st, err := sqlstore.OpenPostgres(pgtest.Schema(t))
			require.NoError(t, err)
			return st
		}},
	}
}

// runs counts handler executions per request id.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *runs) add(id string) {
	r.mu.Lock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[id]++
	r.mu.Unlock()
}

func (r *runs) get(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[id]
}

// tally is the outcome of a scenario.
type tally struct {
	sent, completedOnce, failedWithReason, runTwice, lost int
}

// check reads the ledger's final state of ids (waiting up to wait for them
// to be final) and counts them.
func (c *tally) check(t *testing.T, st aacp.Store, ids []string, r *runs, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for _, id := range ids {
		c.sent++
		var rec *aacp.RequestRecord
		for {
			got, err := st.GetRequestRecord(context.Background(), id)
			if err == nil && got.Status.Final() || time.Now().After(deadline) {
				rec = got
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		n := r.get(id)
		switch {
		case n > 1:
			c.runTwice++
		case rec == nil || !rec.Status.Final():
			c.lost++
		case rec.Status == aacp.OutcomeCompleted && n == 1:
			c.completedOnce++
		case rec.Status == aacp.OutcomeFailed && rec.Error != nil && rec.Error.Message != "" && n == 0:
			c.failedWithReason++
		default:
			c.lost++ // completed without running, or failed without a reason
		}
	}
}

func (c *tally) log(t *testing.T, scenario string) {
	t.Helper()
	t.Logf("%s: sent %d, completed once %d, failed with reason %d, run twice %d, lost %d",
		scenario, c.sent, c.completedOnce, c.failedWithReason, c.runTwice, c.lost)
}

// chaosBurst sends n events at once to a receiver on default options.
func chaosBurst(t *testing.T, st aacp.Store, n int) {
	var r runs
	mux := aacp.NewMux()
	mux.HandleFunc("sink", func(_ context.Context, env *aacp.Envelope) (any, error) {
		r.add(env.RequestID)
		return nil, nil
	})
	node := aacp.New(st, mux, &aacp.Options{Logger: quiet})
	ctx := context.Background()
	require.NoError(t, node.Start(ctx))
	defer node.Close(ctx)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				ids[i] = uuid.NewString()
				_, err := node.SendReliable(ctx, "burster", "sink", i, aacp.WithRequestID(ids[i]))
				require.NoError(t, err)
			}
		}(w)
	}
	wg.Wait()
	var c tally
	c.check(t, st, ids, &r, 60*time.Second)
	c.log(t, "burst")
}

// chaosDuplicates sends every request id twice at once on the node that
// hosts the target.
func chaosDuplicates(t *testing.T, st aacp.Store, n int) {
	var r runs
	mux := aacp.NewMux()
	mux.HandleFunc("worker", func(_ context.Context, env *aacp.Envelope) (any, error) {
		r.add(env.RequestID)
		return "ok", nil
	})
	node := aacp.New(st, mux, &aacp.Options{Logger: quiet})
	ctx := context.Background()
	require.NoError(t, node.Start(ctx))
	defer node.Close(ctx)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = uuid.NewString()
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				_, _ = node.SendRequest(cctx, "client", "worker", i, aacp.WithRequestID(ids[i]))
			}()
		}
	}
	wg.Wait()
	var c tally
	c.check(t, st, ids, &r, 30*time.Second)
	c.log(t, "duplicates")
}

func TestChaos(t *testing.T) {
	for _, s := range chaosStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Run("burst", func(t *testing.T) {
				st := s.open(t)
				defer st.Close()
				n := 20000
				chaosBurst(t, st, n)
			})
			t.Run("duplicates", func(t *testing.T) {
				st := s.open(t)
				defer st.Close()
				chaosDuplicates(t, st, 300)
			})
		})
	}
}
