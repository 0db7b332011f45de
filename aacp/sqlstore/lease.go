package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/keelmcp/keel/aacp"
)

// Leases live in aacp_leases, one row per agent ever leased. An
// acquisition is one upsert that succeeds only when the lease is free
// (released or expired, whoever held it) and raises the token; a renewal or a release matches the holder's token. A
// fenced write reads its lease row first, in its own transaction: on
// PostgreSQL with FOR SHARE, so that a concurrent takeover waits for the
// write's commit (or the write sees the new token and is refused); on
// SQLite the write transaction excludes every other writer anyway.

// shareLock marks the queries that lock the rows they read on PostgreSQL.
const shareLock = " /*share*/"

var leaseQueries = map[string]string{
	"acquireLease": `INSERT INTO aacp_leases (agent_id, owner, token, expires_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (agent_id) DO UPDATE SET owner = excluded.owner, token = aacp_leases.token + 1,
			expires_at = excluded.expires_at
		WHERE aacp_leases.owner = '' OR aacp_leases.expires_at <= ?
		RETURNING token`,
	"renewLease": `UPDATE aacp_leases SET expires_at = ?
		WHERE agent_id = ? AND owner = ? AND token = ? AND owner <> ''`,
	"releaseLease": `UPDATE aacp_leases SET owner = '', expires_at = 0
		WHERE agent_id = ? AND owner = ? AND token = ? AND owner <> ''`,
	"getLease":   `SELECT agent_id, owner, token, expires_at FROM aacp_leases WHERE agent_id = ?`,
	"checkFence": `SELECT 1 FROM aacp_leases WHERE agent_id = ? AND token = ? AND owner <> ''` + shareLock,
	"updateRetry": `UPDATE aacp_requests SET attempts = ?, error = COALESCE(?, error)
		WHERE request_id = ? AND status = 'UNKNOWN'`,
}

func init() {
	for k, v := range leaseQueries {
		queries[k] = v
	}
}

// lockClause returns what replaces shareLock in the dialect's queries.
func (d dialect) lockClause() string {
	if d == dialectPostgres {
		return " FOR SHARE"
	}
	return ""
}

func fenceError(f aacp.Fence) error {
	return fmt.Errorf("%w: agent %q token %d", aacp.ErrLeaseLost, f.AgentID, f.Token)
}

// checkFence fails with aacp.ErrLeaseLost unless f is zero or the current
// token of its agent's lease.
func (s *Store) checkFence(ctx context.Context, tx *sql.Tx, f aacp.Fence) error {
	if f.IsZero() {
		return nil
	}
	var one int
	err := s.stmt(tx, ctx, "checkFence").QueryRowContext(ctx, f.AgentID, int64(f.Token)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fenceError(f)
	}
	return err
}

// UpdateRetry implements aacp.Store.
func (s *Store) UpdateRetry(ctx context.Context, u *aacp.RetryUpdate) (bool, error) {
	errText, err := encodeError(u.Error)
	if err != nil {
		return false, err
	}
	applied := false
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		applied = false
		if err := s.checkFence(ctx, tx, u.Fence); err != nil {
			return err
		}
		ok, err := s.updateUnlessFinal(ctx, tx, u.RequestID, "updateRetry", u.Attempts, errText, u.RequestID)
		applied = ok
		return err
	})
	return applied, err
}

// AcquireLease implements aacp.Store.
func (s *Store) AcquireLease(ctx context.Context, agentID, owner string, now time.Time, ttl time.Duration) (*aacp.Lease, error) {
	expires := now.Add(ttl)
	var (
		token int64
		held  *aacp.Lease
	)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		held = nil
		err := s.stmt(tx, ctx, "acquireLease").QueryRowContext(ctx, agentID, owner, expires.UnixNano(), now.UnixNano()).Scan(&token)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		held, err = scanLease(s.stmt(tx, ctx, "getLease").QueryRowContext(ctx, agentID))
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case held != nil:
		return held, fmt.Errorf("%w: agent %q held by %q until %s", aacp.ErrLeaseHeld, agentID, held.Owner,
			held.ExpiresAt.Format(time.RFC3339Nano))
	}
	return &aacp.Lease{AgentID: agentID, Owner: owner, Token: uint64(token), ExpiresAt: fromNanos(expires.UnixNano())}, nil
}

// RenewLease implements aacp.Store.
func (s *Store) RenewLease(ctx context.Context, l *aacp.Lease, now time.Time, ttl time.Duration) (*aacp.Lease, error) {
	expires := now.Add(ttl)
	if err := s.leaseUpdate(ctx, l, "renewLease", expires.UnixNano()); err != nil {
		return nil, err
	}
	return &aacp.Lease{AgentID: l.AgentID, Owner: l.Owner, Token: l.Token, ExpiresAt: fromNanos(expires.UnixNano())}, nil
}

// ReleaseLease implements aacp.Store.
func (s *Store) ReleaseLease(ctx context.Context, l *aacp.Lease) error {
	return s.leaseUpdate(ctx, l, "releaseLease")
}

// leaseUpdate runs a renewal or a release of l (first arguments: args).
func (s *Store) leaseUpdate(ctx context.Context, l *aacp.Lease, name string, args ...any) error {
	args = append(args, l.AgentID, l.Owner, int64(l.Token))
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		r, err := s.stmt(tx, ctx, name).ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		if k, err := r.RowsAffected(); err != nil {
			return err
		} else if k == 0 {
			return fenceError(l.Fence())
		}
		return nil
	})
}

// GetLease implements aacp.Store.
func (s *Store) GetLease(ctx context.Context, agentID string) (*aacp.Lease, error) {
	l, err := scanLease(s.stmts["getLease"].QueryRowContext(ctx, agentID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: lease %s", aacp.ErrNotFound, agentID)
	}
	return l, err
}

func scanLease(row scanner) (*aacp.Lease, error) {
	var (
		l              aacp.Lease
		token, expires int64
	)
	if err := row.Scan(&l.AgentID, &l.Owner, &token, &expires); err != nil {
		return nil, err
	}
	l.Token, l.ExpiresAt = uint64(token), fromNanos(expires)
	return &l, nil
}
