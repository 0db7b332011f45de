package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/mcp/taskstoretest"
	"github.com/keelmcp/keel/postgres"
)

// open connects a replica to dsn, closed when t ends.
func open(t *testing.T, dsn string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), dsn, nil)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}

func newStore(t *testing.T, db *postgres.DB, o *postgres.TaskStoreOptions) *postgres.TaskStore {
	t.Helper()
	s := postgres.NewTaskStore(db, o)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestTaskStoreConformance(t *testing.T) {
	taskstoretest.Run(t, func(t *testing.T) mcp.TaskStore {
		return newStore(t, open(t, pgtest.Schema(t)), nil)
	})
}

// Two replicas on one database share the records and their bounds.
func TestTaskStoreSharedByReplicas(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, b := newStore(t, open(t, dsn), nil), newStore(t, open(t, dsn), nil)
	ctx := context.Background()
	lim := mcp.TaskLimits{MaxTasks: 1}
	require.NoError(t, a.Create(ctx, working("t1", "alice"), lim))
	got, err := b.Get(ctx, "alice", "t1")
	require.NoError(t, err, "a record created through one replica is read through another")
	assert.Equal(t, mcp.TaskStatusWorking, got.State.Status)
	err = b.Create(ctx, working("t2", "alice"), lim)
	assert.ErrorIs(t, err, mcp.ErrTaskLimit, "the quota's bound counts the records of every replica")

	// Many concurrent creations through both replicas never overshoot
	// MaxTasks.
	lim = mcp.TaskLimits{MaxTasks: 5}
	errs := make(chan error, 40)
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		go func() { errs <- s.Create(ctx, working("c"+string(rune('A'+i)), "bob"), lim) }()
	}
	ok := 0
	for range 40 {
		if err := <-errs; err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, mcp.ErrTaskLimit)
		}
	}
	assert.Equal(t, 5, ok, "exactly MaxTasks creations succeed")
}

// A change made through one replica is reported to the others, not to
// itself.
func TestTaskStoreReportsChanges(t *testing.T) {
	dsn := pgtest.Schema(t)
	a, b := newStore(t, open(t, dsn), nil), newStore(t, open(t, dsn), nil)
	ctx := context.Background()
	seenA, seenB := make(chan string, 4), make(chan string, 4)
	defer a.WatchTaskChanges(func(id string) { seenA <- id })()
	defer b.WatchTaskChanges(func(id string) { seenB <- id })()
	require.NoError(t, a.Create(ctx, working("t1", "alice"), mcp.TaskLimits{}))
	rec, err := b.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	rec.State.Status = mcp.TaskStatusCancelled
	require.NoError(t, b.Update(ctx, rec, mcp.TaskLimits{}))
	select {
	case id := <-seenA:
		assert.Equal(t, "t1", id)
	case <-time.After(5 * time.Second):
		t.Fatal("replica A was not told of B's change")
	}
	select {
	case id := <-seenB:
		t.Fatalf("replica B was told of its own change to %s", id)
	case <-time.After(100 * time.Millisecond):
	}
}

// A task whose replica stopped renewing its lease is marked failed by
// another replica once the lease timeout has passed, never before.
func TestTaskStoreLeaseExpiry(t *testing.T) {
	dsn := pgtest.Schema(t)
	const lease = 300 * time.Millisecond
	dead := postgres.NewTaskStore(open(t, dsn), &postgres.TaskStoreOptions{LeaseTimeout: lease})
	alive := newStore(t, open(t, dsn), &postgres.TaskStoreOptions{LeaseTimeout: lease})
	ctx := context.Background()
	require.NoError(t, dead.Create(ctx, working("t1", "alice"), mcp.TaskLimits{}))
	modern := working("t2", "alice")
	modern.Revision = mcp.Version20260728
	require.NoError(t, dead.Create(ctx, modern, mcp.TaskLimits{}))
	require.NoError(t, alive.Create(ctx, working("mine", "alice"), mcp.TaskLimits{}))

	time.Sleep(lease / 2)
	n, err := alive.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a lease still running is left alone")
	changes := make(chan mcp.Change, 4)
	defer postgres.NewFanOut(open(t, dsn)).Subscribe(func(c mcp.Change) { changes <- c })()
	require.NoError(t, dead.Close()) // the replica stops renewing

	start := time.Now()
	require.Eventually(t, func() bool {
		r, err := alive.Get(ctx, "alice", "t1")
		return err == nil && r.State.Status == mcp.TaskStatusFailed
	}, 5*time.Second, 20*time.Millisecond)
	assert.Less(t, time.Since(start), 3*lease, "failed within about the lease timeout")
	r, err := alive.Get(ctx, "alice", "t1")
	require.NoError(t, err)
	require.NotNil(t, r.Error)
	assert.Equal(t, postgres.LeaseExpiredMessage, r.Error.Message)
	assert.Contains(t, r.State.StatusMessage, "lease expired")
	m, err := alive.Get(ctx, "alice", "t2")
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusFailed, m.State.Status)
	assert.Empty(t, m.State.StatusMessage, "a 2026-07-28 task's failure is in its error")

	for range 2 { // the listen streams of every replica are told
		select {
		case c := <-changes:
			assert.Equal(t, mcp.TaskChange(mcp.Task{}).Kind, c.Kind)
			require.NotNil(t, c.Task)
			assert.Equal(t, mcp.TaskStatusFailed, c.Task.Status)
		case <-time.After(5 * time.Second):
			t.Fatal("the sweeper's failures were not announced")
		}
	}

	time.Sleep(lease)
	mine, err := alive.Get(ctx, "alice", "mine")
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusWorking, mine.State.Status, "a replica that renews keeps its tasks")
}

func working(id, owner string) *mcp.TaskRecord {
	ttl := int64(60000)
	return &mcp.TaskRecord{ID: id, Owner: owner, Quota: owner, Revision: mcp.Version20251125,
		State: mcp.Task{TaskID: id, Status: mcp.TaskStatusWorking, CreatedAt: "2026-01-02T03:04:05Z",
			LastUpdatedAt: "2026-01-02T03:04:05Z", TTL: &ttl}}
}
