package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Group commit: every write of a Store goes through one writer goroutine,
// which runs the writes queued at the same moment in one transaction, each
// inside a savepoint of its own (so that one failing write does not undo
// the others), and commits once. A commit, and on SQLite its WAL frames and
// fsync, is the expensive part of a write: concurrent callers share it.
// A write returns only after its transaction committed (or failed): a
// status is durable before it is reported.

// maxBatch bounds the writes of one transaction.
const maxBatch = 64

// ErrClosed is returned by the writes of a closed Store.
var ErrClosed = errors.New("sqlstore: store is closed")

// writeOp is one write: f runs inside the batch's transaction.
type writeOp struct {
	ctx   context.Context
	f     func(ctx context.Context, tx *sql.Tx) error
	done  chan error
	tries int
}

// write runs f in a transaction shared with the writes queued alongside.
// f may run more than once (when the transaction must be retried), so it
// must start from scratch every time. ctx bounds the wait for the writer;
// once f started, write waits for the commit whatever ctx says, so that an
// error return always means nothing was written.
func (s *Store) write(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	op := &writeOp{ctx: context.WithoutCancel(ctx), f: f, done: make(chan error, 1)}
	select {
	case s.writes <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopped:
		return ErrClosed
	}
	return <-op.done
}

// writer is the goroutine that runs the writes.
func (s *Store) writer() {
	defer close(s.writerDone)
	batch := make([]*writeOp, 0, maxBatch)
	for {
		select {
		case op := <-s.writes:
			batch = append(batch[:0], op)
		case <-s.stopped:
			s.failQueued()
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case op := <-s.writes:
				batch = append(batch, op)
			default:
				break drain
			}
		}
		s.runBatch(batch)
		clear(batch)
	}
}

// failQueued fails the writes still queued when the store closes.
func (s *Store) failQueued() {
	for {
		select {
		case op := <-s.writes:
			op.done <- ErrClosed
		default:
			return
		}
	}
}

// runBatch runs ops in one transaction and reports to each. Writes that
// fail with a transient error (busy database, serialization failure,
// deadlock) are tried again, up to 5 times, in a later transaction.
func (s *Store) runBatch(ops []*writeOp) {
	for len(ops) > 0 {
		results, commitErr := s.runTx(ops)
		var again []*writeOp
		for i, op := range ops {
			err := results[i]
			if err == nil {
				err = commitErr
			}
			if err != nil && retryable(err) && op.tries < 5 {
				op.tries++
				again = append(again, op)
				continue
			}
			op.done <- err
		}
		if len(again) > 0 {
			time.Sleep(time.Duration(again[0].tries) * 5 * time.Millisecond)
		}
		ops = again
	}
}

// runTx runs ops in one transaction: the result of each, and the error of
// the transaction as a whole (begin or commit).
func (s *Store) runTx(ops []*writeOp) ([]error, error) {
	results := make([]error, len(ops))
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return results, err
	}
	if len(ops) == 1 {
		if results[0] = ops[0].f(ops[0].ctx, tx); results[0] != nil {
			tx.Rollback() //nolint:errcheck // the error of f matters
			return results, nil
		}
		return results, tx.Commit()
	}
	applied := 0
	for i, op := range ops {
		sp := fmt.Sprintf("w%d", i)
		if _, err := tx.ExecContext(op.ctx, "SAVEPOINT "+sp); err != nil {
			tx.Rollback() //nolint:errcheck // reported below
			return results, err
		}
		if results[i] = op.f(op.ctx, tx); results[i] != nil {
			if _, err := tx.ExecContext(op.ctx, "ROLLBACK TO SAVEPOINT "+sp); err != nil {
				tx.Rollback() //nolint:errcheck // reported below
				return results, err
			}
		} else {
			applied++
		}
		if _, err := tx.ExecContext(op.ctx, "RELEASE SAVEPOINT "+sp); err != nil {
			tx.Rollback() //nolint:errcheck // reported below
			return results, err
		}
	}
	if applied == 0 {
		return results, tx.Rollback()
	}
	return results, tx.Commit()
}
