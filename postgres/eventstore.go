package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// EventStoreOptions configure NewEventStore. A nil *EventStoreOptions
// means all defaults.
type EventStoreOptions struct {
	// MaxBytesPerSession bounds the event data kept per session; the
	// oldest events of the session (across its streams) are deleted first,
	// but the newest is always kept (default
	// streamhttp.DefaultEventStoreBytes).
	MaxBytesPerSession int64
	// MaxIdle is how long the events of a session nobody appends to are
	// kept (default DefaultEventIdle): a replica that dies never reports
	// the end of its sessions.
	MaxIdle time.Duration
}

// DefaultEventIdle is EventStoreOptions.MaxIdle when zero.
const DefaultEventIdle = time.Hour

// EventStore is a streamhttp.EventStore in PostgreSQL, shared by the
// replicas: a stream's events can be replayed (Last-Event-ID) through any
// replica that serves its session. Set it as streamhttp.Options.EventStore
// on every replica.
type EventStore struct {
	db      *DB
	max     int64
	maxIdle time.Duration
}

var _ streamhttp.EventStore = (*EventStore)(nil)

// NewEventStore returns the event store of db.
func NewEventStore(db *DB, o *EventStoreOptions) *EventStore {
	e := &EventStore{db: db, max: streamhttp.DefaultEventStoreBytes, maxIdle: DefaultEventIdle}
	if o != nil && o.MaxBytesPerSession > 0 {
		e.max = o.MaxBytesPerSession
	}
	if o != nil && o.MaxIdle > 0 {
		e.maxIdle = o.MaxIdle
	}
	return e
}

// errOutOfOrder refuses an event whose seq does not follow its stream's.
// appendTimeout bounds one Append, so that a stalled database delays a
// stream's events by at most that much (the event is then lost, and a
// later Append drops the stream's earlier ones).
const appendTimeout = 5 * time.Second

var errOutOfOrder = errors.New("postgres: event store: seq out of order")

// Append implements streamhttp.EventStore.
func (e *EventStore) Append(ctx context.Context, sessionID, streamID string, seq uint64, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, appendTimeout)
	defer cancel()
	return pgx.BeginFunc(ctx, e.db.pool, func(tx pgx.Tx) error {
		var bytes int64
		// The session's row serializes its appends (and counts its bytes).
		err := tx.QueryRow(ctx, `INSERT INTO keel_sse_sessions (session_id, bytes) VALUES ($1, $2)
			ON CONFLICT (session_id) DO UPDATE SET bytes = keel_sse_sessions.bytes + $2, touched_at = now()
			RETURNING bytes`, sessionID, int64(len(data))).Scan(&bytes)
		if err != nil {
			return err
		}
		var last *int64
		if err := tx.QueryRow(ctx, `SELECT max(seq) FROM keel_sse_events WHERE session_id = $1 AND stream_id = $2`,
			sessionID, streamID).Scan(&last); err != nil {
			return err
		}
		switch {
		case last != nil && seq <= uint64(*last):
			return errOutOfOrder
		case last != nil && seq > uint64(*last)+1:
			// An earlier append failed: the events before the gap cannot be
			// replayed in order any more, so they go (Replay then reports
			// them lost) and their bytes leave the session's count.
			if err := tx.QueryRow(ctx, `WITH d AS (DELETE FROM keel_sse_events WHERE session_id = $1 AND stream_id = $2 RETURNING length(data) AS n)
				UPDATE keel_sse_sessions SET bytes = bytes - (SELECT coalesce(sum(n), 0) FROM d) WHERE session_id = $1 RETURNING bytes`,
				sessionID, streamID).Scan(&bytes); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO keel_sse_events (session_id, stream_id, seq, data) VALUES ($1, $2, $3, $4)`,
			sessionID, streamID, int64(seq), data); err != nil {
			return err
		}
		if bytes > e.max {
			if err := e.evict(ctx, tx, sessionID, bytes); err != nil {
				return err
			}
		}
		if seq%64 == 1 { // now and then: the sessions of replicas that died
			_, err = tx.Exec(ctx, `WITH gone AS (DELETE FROM keel_sse_sessions WHERE touched_at < now() - $1::interval RETURNING session_id)
				DELETE FROM keel_sse_events WHERE session_id IN (SELECT session_id FROM gone)`, e.maxIdle.String())
		}
		return err
	})
}

// evict deletes the session's oldest events, the newest excepted, until
// its bytes are within the bound.
func (e *EventStore) evict(ctx context.Context, tx pgx.Tx, sessionID string, bytes int64) error {
	rows, err := tx.Query(ctx, `SELECT id, length(data) FROM keel_sse_events WHERE session_id = $1 ORDER BY id`, sessionID)
	if err != nil {
		return err
	}
	type ev struct{ id, n int64 }
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ev, error) {
		var x ev
		return x, r.Scan(&x.id, &x.n)
	})
	if err != nil {
		return err
	}
	var drop []int64
	for i := 0; bytes > e.max && i < len(evs)-1; i++ {
		drop, bytes = append(drop, evs[i].id), bytes-evs[i].n
	}
	if len(drop) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM keel_sse_events WHERE id = ANY($1)`, drop); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE keel_sse_sessions SET bytes = $2 WHERE session_id = $1`, sessionID, bytes)
	return err
}

// Replay implements streamhttp.EventStore.
func (e *EventStore) Replay(ctx context.Context, sessionID, streamID string, after uint64, fn func(seq uint64, data []byte) error) error {
	var first, last *int64
	if err := e.db.pool.QueryRow(ctx, `SELECT min(seq), max(seq) FROM keel_sse_events WHERE session_id = $1 AND stream_id = $2`,
		sessionID, streamID).Scan(&first, &last); err != nil {
		return err
	}
	switch {
	case last == nil:
		if after == 0 {
			return nil
		}
		return streamhttp.ErrEventsLost
	case after > uint64(*last):
		return streamhttp.ErrEventsLost // an id this stream never had
	case after+1 < uint64(*first) && after < uint64(*last):
		return streamhttp.ErrEventsLost
	}
	rows, err := e.db.pool.Query(ctx, `SELECT seq, data FROM keel_sse_events WHERE session_id = $1 AND stream_id = $2 AND seq > $3 ORDER BY seq`,
		sessionID, streamID, int64(after))
	if err != nil {
		return err
	}
	type ev struct {
		seq  int64
		data []byte
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ev, error) {
		var x ev
		return x, r.Scan(&x.seq, &x.data)
	})
	if err != nil {
		return err
	}
	for _, x := range evs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(uint64(x.seq), x.data); err != nil {
			return err
		}
	}
	return nil
}

// SessionClosed implements streamhttp.EventStore.
func (e *EventStore) SessionClosed(ctx context.Context, sessionID string) error {
	return pgx.BeginFunc(ctx, e.db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM keel_sse_events WHERE session_id = $1`, sessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM keel_sse_sessions WHERE session_id = $1`, sessionID)
		return err
	})
}
