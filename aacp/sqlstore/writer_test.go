package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/storetest"
	"github.com/keelmcp/keel/internal/pgtest"
)

func openSQLiteStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func openPostgresStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := OpenPostgres(pgtest.Schema(t), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

var errWriteFailed = errors.New("write failed on purpose")

// insertOp is a write that stores the lease row of agent, then fails if
// fail says so (after its statement: the savepoint must undo it).
func insertOp(s *Store, agent string, fail bool) *writeOp {
	return &writeOp{ctx: context.Background(), done: make(chan error, 1), f: func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO aacp_leases (agent_id, owner, token, expires_at) VALUES (?, 'o', 1, 0)`), agent); err != nil {
			return err
		}
		if fail {
			return errWriteFailed
		}
		return nil
	}}
}

// A batch whose writes run without savepoints falls back to a savepoint
// per write when one fails: the failing writes leave nothing, the others
// commit, and each caller gets its own result.
func testBatchIsolation(t *testing.T, s *Store) {
	ctx := context.Background()
	var ops []*writeOp
	for i := range 10 {
		ops = append(ops, insertOp(s, fmt.Sprintf("agent-%d", i), i%4 == 1))
	}
	ops = append(ops, insertOp(s, "agent-0", false)) // a duplicate key: fails in the database
	s.runBatch(ops)
	for i, op := range ops[:10] {
		err := <-op.done
		_, gerr := s.GetLease(ctx, fmt.Sprintf("agent-%d", i))
		if i%4 == 1 {
			assert.ErrorIs(t, err, errWriteFailed, "write %d", i)
			assert.ErrorIs(t, gerr, aacp.ErrNotFound, "write %d left a row", i)
		} else {
			assert.NoError(t, err, "write %d", i)
			assert.NoError(t, gerr, "write %d", i)
		}
	}
	assert.Error(t, <-ops[10].done, "duplicate key")
}

func TestBatchIsolationSQLite(t *testing.T) { testBatchIsolation(t, openSQLiteStore(t)) }

func TestBatchIsolationPostgres(t *testing.T) { testBatchIsolation(t, openPostgresStore(t)) }

// Reads on SQLite have connections of their own: they do not wait while
// the writer holds a transaction open.
func TestSQLiteReadsDoNotWaitForTheWriter(t *testing.T) {
	s := openSQLiteStore(t)
	ctx := context.Background()
	now := time.Now()
	req := storetest.Request("a", "b", now)
	require.NoError(t, s.Enqueue(ctx, req, storetest.Message(req, 1, now), aacp.Fence{}))
	inTx, release := make(chan struct{}), make(chan struct{})
	go s.write(ctx, func(context.Context, *sql.Tx) error { //nolint:errcheck // only holds the writer
		close(inTx)
		<-release
		return nil
	})
	<-inTx
	defer close(release)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := s.GetRequestRecord(rctx, req.RequestID)
	require.NoError(t, err)
	assert.Equal(t, req.RequestID, got.RequestID)
	seq, err := s.GetLastSequence(rctx, "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), seq)
}

// The writes of one pair always go to the same writer, and the pairs
// spread over all writers.
func TestPairWriter(t *testing.T) {
	s := &Store{queues: make([]chan *writeOp, 4), seed: maphash.MakeSeed()}
	used := map[int]bool{}
	for i := range 200 {
		src, dst := fmt.Sprintf("src-%d", i), "dst"
		w := s.pairWriter(src, dst)
		require.Equal(t, w, s.pairWriter(src, dst))
		require.True(t, w >= 0 && w < 4)
		used[w] = true
	}
	assert.Len(t, used, 4)
	one := &Store{queues: make([]chan *writeOp, 1)}
	assert.Equal(t, 0, one.pairWriter("a", "b"))
}
