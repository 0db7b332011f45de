package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/keelmcp/keel/aacp"
)

// Group commit: every write of a Store goes through its writers (one
// goroutine on SQLite, WithWriters on PostgreSQL, which take a connection
// for each transaction from the pool they share with the reads). A writer takes every write queued at that moment (up to
// WithMaxBatch), runs them in one transaction and commits once. A commit,
// and its fsync, is the expensive part of a write: concurrent callers
// share it, and the more of them wait, the larger the next batch.
//
// A write that changes a pair's sequence row (Enqueue, Resolve with a
// RESPONSE, Acknowledge, UpdateLastSequence) names the pair: the writes of
// one pair always go to the same writer, so that two writers never wait
// for each other's sequence rows; the others (claims, lease operations,
// retry updates) go to the writers in turn, so two writers' transactions
// can wait for each other's rows. PostgreSQL resolves such a cycle after
// its deadlock_timeout by aborting one transaction (40P01); its writes are
// retried (maxTries).
//
// The writes of a batch run without savepoints: those without a grouped
// form one after the other, then the grouped ones (enqueues, resolutions,
// acknowledgments) together, sharing multi-row statements (group.go).
// When a write without a grouped form fails, or the grouped path gives
// up, the transaction is rolled back and the batch runs again with a
// savepoint around each write, so that the failing write undoes only its
// own statements and the others commit.
//
// A write returns only after its transaction committed (or failed): a
// status is durable before it is reported.

// maxTries bounds how often a write that meets a transient error (busy
// database, serialization failure, deadlock) runs.
const maxTries = 6

// ErrClosed is returned by the writes of a closed Store.
var ErrClosed = errors.New("sqlstore: store is closed")

// writeOp is one write: f runs inside the batch's transaction. A write
// with a grouped form g (enqueues, resolutions, acknowledgments) shares its
// statements with the other grouped writes of its batch (group.go); f is
// what it runs alone.
type writeOp struct {
	ctx   context.Context
	f     func(ctx context.Context, tx *sql.Tx) error
	g     *grouped
	done  chan error
	tries int
}

// write runs f in a transaction shared with the writes queued alongside.
// f may run more than once (when the transaction must be retried), so it
// must start from scratch every time. ctx bounds the wait for a writer;
// once f started, write waits for the commit whatever ctx says, so that an
// error return always means nothing was written.
func (s *Store) write(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	return s.writeTo(ctx, s.queues[s.nextWriter()], f, nil)
}

// nextWriter returns the index of the writer of a write without a pair.
func (s *Store) nextWriter() int { return int(s.turn.Add(1) % uint64(len(s.queues))) }

// writePair is write for a write that changes the sequence row of
// source→target: it goes to the pair's writer.
func (s *Store) writePair(ctx context.Context, source, target string, f func(ctx context.Context, tx *sql.Tx) error) error {
	return s.writeTo(ctx, s.queues[s.pairWriter(source, target)], f, nil)
}

// pairWriter returns the index of the writer of source→target's writes.
func (s *Store) pairWriter(source, target string) int {
	if len(s.queues) == 1 {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(source)
	h.WriteByte(0)
	h.WriteString(target)
	return int(h.Sum64() % uint64(len(s.queues)))
}

// writeMessage is write for a write that stores g.msg (may be nil), with
// its grouped form g: it goes to the writer of the message's pair.
func (s *Store) writeMessage(ctx context.Context, g *grouped, f func(ctx context.Context, tx *sql.Tx) error) error {
	i := 0
	if g.msg == nil {
		i = s.nextWriter()
	} else {
		i = s.pairWriter(g.msg.Envelope.SourceAgentID, g.msg.Envelope.TargetAgentID)
	}
	return s.writeTo(ctx, s.queues[i], f, g)
}

// writeAcks runs f on acks, in one write per writer: f gets the acks of
// that writer's pairs, in their order in acks, and sets lost to the errors
// of those it skipped as stale (from scratch each time it runs); the
// grouped form of each write does the same. It returns the first error,
// or else the errors of the acks skipped, joined.
func (s *Store) writeAcks(ctx context.Context, acks []aacp.Ack, f func(ctx context.Context, tx *sql.Tx, acks []aacp.Ack, lost *[]error) error) error {
	groups := make([][]aacp.Ack, len(s.queues))
	for _, a := range acks {
		i := s.pairWriter(a.Source, a.Target)
		groups[i] = append(groups[i], a)
	}
	lost := make([][]error, len(s.queues))
	var ops []*writeOp
	var err error
	for i, g := range groups {
		if len(g) == 0 {
			continue
		}
		op, serr := s.submit(ctx, s.queues[i], func(ctx context.Context, tx *sql.Tx) error { return f(ctx, tx, g, &lost[i]) },
			&grouped{acks: g, lost: &lost[i]})
		if serr != nil {
			err = serr
			break
		}
		ops = append(ops, op)
	}
	for _, op := range ops {
		if werr := <-op.done; err == nil {
			err = werr
		}
	}
	if err != nil {
		return err
	}
	return errors.Join(slices.Concat(lost...)...)
}

func (s *Store) writeTo(ctx context.Context, q chan *writeOp, f func(ctx context.Context, tx *sql.Tx) error, g *grouped) error {
	op, err := s.submit(ctx, q, f, g)
	if err != nil {
		return err
	}
	return <-op.done
}

// submit queues f (grouped form g, may be nil) in q; its result comes on
// the op's done.
func (s *Store) submit(ctx context.Context, q chan *writeOp, f func(ctx context.Context, tx *sql.Tx) error, g *grouped) (*writeOp, error) {
	op := &writeOp{ctx: context.WithoutCancel(ctx), f: f, g: g, done: make(chan error, 1)}
	select {
	case q <- op:
		return op, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.stopped:
		return nil, ErrClosed
	}
}

// writer is the goroutine that runs the writes of queue q.
func (s *Store) writer(q chan *writeOp) {
	defer s.writersDone.Done()
	batch := make([]*writeOp, 0, s.cfg.maxBatch)
	for {
		select {
		case op := <-q:
			batch = append(batch[:0], op)
		case <-s.stopped:
			failQueued(q)
			return
		}
	drain:
		for len(batch) < s.cfg.maxBatch {
			select {
			case op := <-q:
				batch = append(batch, op)
			default:
				break drain
			}
		}
		s.runBatch(batch)
		clear(batch)
	}
}

// failQueued fails the writes still queued in q when the store closes.
func failQueued(q chan *writeOp) {
	for {
		select {
		case op := <-q:
			op.done <- ErrClosed
		default:
			return
		}
	}
}

// runBatch runs ops in one transaction and reports to each. Writes that
// fail with a transient error are tried again, up to maxTries times in
// all, in a later transaction.
func (s *Store) runBatch(ops []*writeOp) {
	for len(ops) > 0 {
		results, commitErr := s.runTx(ops, false)
		if results == nil { // a write failed: isolate it
			results, commitErr = s.runTx(ops, true)
		}
		var again []*writeOp
		for i, op := range ops {
			err := results[i]
			if err == nil {
				err = commitErr
			}
			if err != nil && retryable(err) && op.tries < maxTries-1 {
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
// the transaction as a whole (begin or commit). Without isolate, the
// writes without a grouped form run one after the other, then the grouped
// ones together (when there are two or more; see group.go), and the first
// failing write without a grouped form, or a grouped path that gives up,
// rolls the transaction back and makes runTx return nil results (when
// there are several writes): the caller runs the batch again with
// isolate, where each write runs alone with a savepoint of its own.
func (s *Store) runTx(ops []*writeOp, isolate bool) ([]error, error) {
	results := make([]error, len(ops))
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return results, err
	}
	if len(ops) == 1 || !isolate {
		var (
			group   []*writeOp
			groupAt []int
		)
		if len(ops) > 1 {
			for i, op := range ops {
				if op.g != nil {
					group, groupAt = append(group, op), append(groupAt, i)
				}
			}
			if len(group) < 2 {
				group, groupAt = nil, nil
			}
		}
		for i, op := range ops {
			if group != nil && op.g != nil {
				continue
			}
			if results[i] = op.f(op.ctx, tx); results[i] != nil {
				tx.Rollback() //nolint:errcheck // the error of f matters
				if len(ops) > 1 {
					return nil, nil
				}
				return results, nil
			}
		}
		if group != nil {
			gres := make([]error, len(group))
			if err := s.runGrouped(context.Background(), tx, group, gres); err != nil {
				tx.Rollback() //nolint:errcheck // run again one write at a time
				s.ungroupedRuns.Add(1)
				return nil, nil
			}
			s.groupedRuns.Add(1)
			for k, i := range groupAt {
				results[i] = gres[k]
			}
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
