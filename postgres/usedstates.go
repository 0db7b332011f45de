package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/keelmcp/keel/mcp"
)

// UsedStates is an mcp.UsedStateStore in PostgreSQL: the requestStates
// used in single-use mode (mcp.ServerOptions.StateSingleUse), shared by
// the replicas, so that a state is accepted once in the whole deployment.
// Set it as mcp.ServerOptions.UsedStates on every replica. A state's id is
// kept until the state expires; the bound (ServerOptions.MaxUsedStates)
// counts the ids of all replicas together, kept in a counter row that
// each acceptance updates in its transaction (so acceptances of the
// deployment are serialized on that row).
type UsedStates struct {
	db  *DB
	now func() time.Time
}

var _ mcp.UsedStateStore = (*UsedStates)(nil)

// NewUsedStates returns the used-state store of db, whose clock is now
// (nil: time.Now).
func NewUsedStates(db *DB, now func() time.Time) *UsedStates {
	if now == nil {
		now = time.Now
	}
	return &UsedStates{db: db, now: now}
}

// purgeBatch bounds the expired ids one UseState deletes.
const purgeBatch = 256

// UseState implements mcp.UsedStateStore.
func (u *UsedStates) UseState(ctx context.Context, id []byte, expiry time.Time, max int) error {
	now := u.now().UnixNano()
	return pgx.BeginFunc(ctx, u.db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM keel_used_states WHERE digest IN (
			SELECT digest FROM keel_used_states WHERE expires_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`, now, purgeBatch)
		if err != nil {
			return err
		}
		purged := tag.RowsAffected()
		tag, err = tx.Exec(ctx, `INSERT INTO keel_used_states (digest, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, expiry.Add(time.Second).UnixNano()) // a state is valid through its expiry's second
		if err != nil {
			return err
		}
		added := tag.RowsAffected()
		var n int64
		if err := tx.QueryRow(ctx, `UPDATE keel_used_states_count SET n = n + $1 RETURNING n`, added-purged).Scan(&n); err != nil {
			return err
		}
		switch {
		case added == 0:
			return mcp.ErrStateUsed // rolled back
		case max > 0 && n > int64(max):
			return mcp.ErrTooManyUsedStates // rolled back: the id is not recorded
		}
		return nil
	})
}
