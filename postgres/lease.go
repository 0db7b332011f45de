package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/jackc/pgx/v5"

	"github.com/keelmcp/keel/mcp"
)

// LeaseExpiredMessage is the error message of a task failed because the
// replica that ran it stopped renewing its lease.
const LeaseExpiredMessage = "Internal error: the replica that ran the task stopped (its lease expired)"

// keepLeases renews this instance's leases, sweeps the expired ones and
// has the task watchers re-read the tasks this instance runs every
// lease/3, until ctx ends.
func (s *TaskStore) keepLeases(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.renew(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("postgres: renewing the task leases failed", "error", err)
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("postgres: sweeping expired task leases failed", "error", err)
		}
		s.db.resync(chanTasks) // a backstop for a notification lost in a full queue
	}
}

// renew extends the leases of the tasks this instance runs (created, not
// yet terminal through it): a record whose final write failed, or one a
// predecessor with the same ReplicaID created, is not renewed, so the
// sweeper fails it.
func (s *TaskStore) renew(ctx context.Context) error {
	now := s.now().UnixNano()
	_, err := s.db.pool.Exec(ctx, `UPDATE keel_tasks SET lease_until = $1 WHERE lease_owner = $2 AND NOT terminal AND id = ANY($3)`,
		now+s.lease.Nanoseconds(), s.db.id, s.runIDs())
	return err
}

// sweepBatch bounds the tasks one query of Sweep reads.
const sweepBatch = 100

// Sweep marks failed the tasks, not terminal, whose lease expired (their
// replica stopped, or this one's instance no longer runs them), and
// returns how many. It reads them sweepBatch at a time until none is left.
// The lease keeper calls it every LeaseTimeout/3; tests and operators may
// call it too.
func (s *TaskStore) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		n, read, err := s.sweepOnce(ctx)
		total += n
		if err != nil || read < sweepBatch || n == 0 {
			return total, err
		}
	}
}

// sweepOnce fails at most sweepBatch expired tasks; it returns how many it
// failed and how many it read.
func (s *TaskStore) sweepOnce(ctx context.Context) (failed, read int, err error) {
	now := s.now()
	rows, err := s.db.pool.Query(ctx, `SELECT `+taskColumns+` FROM keel_tasks
		WHERE NOT terminal AND lease_until < $1 AND NOT (lease_owner = $2 AND id = ANY($4)) AND (expires_at = 0 OR expires_at > $1)
		ORDER BY lease_until LIMIT $3`, now.UnixNano(), s.db.id, sweepBatch, s.runIDs())
	if err != nil {
		return 0, 0, err
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*mcp.TaskRecord, error) { return scanTask(r) })
	if err != nil {
		return 0, 0, err
	}
	lim := *s.lim.Load()
	n := 0
	for _, rec := range recs {
		ts := now.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
		rec.State.Status, rec.State.LastUpdatedAt = mcp.TaskStatusFailed, ts
		rec.State.StatusMessage = ""
		if rec.Revision != mcp.Version20260728 {
			rec.State.StatusMessage = "Tool execution failed: " + LeaseExpiredMessage
		}
		rec.Result, rec.Error, rec.Size, rec.Input = nil, &mcp.Error{Code: mcp.CodeInternalError, Message: LeaseExpiredMessage}, 0, nil
		switch err := s.update(ctx, rec, lim, now.UnixNano()); {
		case err == nil:
			n++
			s.announce(ctx, rec.State)
		case errors.Is(err, mcp.ErrTaskConflict), errors.Is(err, mcp.ErrTaskNotFound):
			// renewed (the lease is checked again under the row's lock),
			// changed or deleted meanwhile
		default:
			return n, len(recs), err
		}
	}
	return n, len(recs), nil
}

// sweeperOrigin is the origin of the changes the sweeper announces: every
// replica's FanOut delivers them, the sweeping one's included (no
// replica ran the failed task any more, so none announced it).
const sweeperOrigin = "sweeper"

// announce tells the listen streams of every replica (through FanOut) of
// the new state of a task the sweeper failed. A failure is logged: the
// state is in the record for tasks/get.
func (s *TaskStore) announce(ctx context.Context, t mcp.Task) {
	b, err := json.Marshal(mcp.TaskChange(t))
	switch {
	case err != nil:
	case len(b)+len(sweeperOrigin)+1 > MaxNotifyPayload:
		err = fmt.Errorf("postgres: the announcement is %d bytes, over MaxNotifyPayload (%d)", len(b)+len(sweeperOrigin)+1, MaxNotifyPayload)
	default:
		_, err = s.db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, chanFanOut, sweeperOrigin+"|"+string(b))
	}
	if err != nil {
		s.log.Warn("postgres: the failure of a task whose lease expired was not announced", "taskId", t.TaskID, "error", err)
	}
}
