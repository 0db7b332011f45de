package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
)

// The sweeper's write checks the lease again under the row's lock: a
// record whose lease was renewed after the sweeper read it (lease_until
// not before the sweep's time) is left as it is, one whose lease is still
// expired is failed.
func TestSweepWriteRechecksLeaseUnderRowLock(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, pgtest.Schema(t), nil)
	require.NoError(t, err)
	defer db.Close()
	s := NewTaskStore(db, &TaskStoreOptions{LeaseTimeout: time.Hour})
	defer s.Close()
	ttl := int64(60000)
	rec := &mcp.TaskRecord{ID: "t", Owner: "alice", Quota: "alice", Revision: mcp.Version20251125,
		State: mcp.Task{TaskID: "t", Status: mcp.TaskStatusWorking, CreatedAt: "2026-01-02T03:04:05Z", LastUpdatedAt: "2026-01-02T03:04:05Z", TTL: &ttl}}
	require.NoError(t, s.Create(ctx, rec, mcp.TaskLimits{}))
	var leaseUntil int64
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT lease_until FROM keel_tasks WHERE id = 't'`).Scan(&leaseUntil))

	for _, tc := range []struct {
		name      string
		expiredBy int64
		want      error
	}{
		{"renewed after the read", leaseUntil, mcp.ErrTaskConflict},
		{"lease well past the sweep time", leaseUntil - int64(time.Minute), mcp.ErrTaskConflict},
		{"still expired", leaseUntil + 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Get(ctx, "alice", "t")
			require.NoError(t, err)
			got.State.Status = mcp.TaskStatusFailed
			err = s.update(ctx, got, mcp.TaskLimits{}, tc.expiredBy)
			after, gerr := s.Get(ctx, "alice", "t")
			require.NoError(t, gerr)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				assert.Equal(t, mcp.TaskStatusWorking, after.State.Status)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, mcp.TaskStatusFailed, after.State.Status)
		})
	}
}
