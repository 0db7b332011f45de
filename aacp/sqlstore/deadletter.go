package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/mcp"
)

// Dead letters are rows of aacp_messages with status FAILED and a
// dead_reason (schema version 3): the stored envelope is kept as it is, so
// that an operator can see it, repair it and retry it.

var deadQueries = map[string]string{
	"quarantine": `UPDATE aacp_messages SET status = 'FAILED', dead_reason = ?
		WHERE message_id = ? AND status = 'UNKNOWN'`,
	"messageExists": `SELECT 1 FROM aacp_messages WHERE message_id = ?`,
	"deadLetters": `SELECT message_id, request_id, source_agent_id, target_agent_id, seq, message_type, envelope,
		dead_reason, created_at FROM aacp_messages WHERE dead_reason <> '' ORDER BY created_at, message_id LIMIT ?`,
	"deadLetter": `SELECT message_id, request_id, source_agent_id, target_agent_id, seq, message_type, envelope,
		dead_reason, created_at FROM aacp_messages WHERE message_id = ? AND dead_reason <> ''`,
	"retryDead": `UPDATE aacp_messages SET status = 'UNKNOWN', dead_reason = '', retry_count = 0, next_retry_at = ?,
		claimed_by = '' WHERE message_id = ? AND dead_reason <> ''`,
	"dropDead": `DELETE FROM aacp_messages WHERE message_id = ? AND dead_reason <> ''`,
	"failBadRequest": `UPDATE aacp_requests SET error = ?,
		completion = CASE WHEN status = 'UNKNOWN' THEN 'protocol_error' ELSE completion END,
		completed_at = CASE WHEN status = 'UNKNOWN' THEN ? ELSE completed_at END,
		status = CASE WHEN status = 'UNKNOWN' THEN 'FAILED' ELSE status END WHERE request_id = ?`,
}

func init() {
	for k, v := range deadQueries {
		queries[k] = v
	}
}

// badRequestRow is a request row that cannot be decoded.
type badRequestRow struct {
	id  string
	err error
}

func (b *badRequestRow) Error() string {
	return fmt.Sprintf("sqlstore: request %s cannot be decoded: %v", b.id, b.err)
}

func (b *badRequestRow) Unwrap() error { return b.err }

// failBadRequest replaces the undecodable part of request row b with an
// error that gives the reason, and fails the request if it was pending
// (completion protocol_error): one bad row never stops a list, a Start or
// a recovery, and its request ends FAILED with a recorded reason instead of
// being delivered forever.
func (s *Store) failBadRequest(ctx context.Context, b *badRequestRow) error {
	se := &mcp.StructuredError{Code: aacp.CodeProtocol, Message: "request record cannot be decoded: " + b.err.Error()}
	text, err := json.Marshal(se)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.stmt(tx, ctx, "failBadRequest").ExecContext(ctx, string(text), nanos(time.Now()), b.id)
		return err
	})
}

// quarantine moves message id to the dead letters if it is UNKNOWN and
// reports whether it did; a missing message is aacp.ErrNotFound.
func (s *Store) quarantine(ctx context.Context, tx *sql.Tx, id, reason string) (bool, error) {
	r, err := s.stmt(tx, ctx, "quarantine").ExecContext(ctx, reason, id)
	if err != nil {
		return false, err
	}
	k, err := r.RowsAffected()
	if err != nil || k > 0 {
		return k > 0, err
	}
	var one int
	if err := s.stmt(tx, ctx, "messageExists").QueryRowContext(ctx, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("%w: message %s", aacp.ErrNotFound, id)
	} else if err != nil {
		return false, err
	}
	return false, nil
}

// Quarantine implements aacp.Store.
func (s *Store) Quarantine(ctx context.Context, messageID, reason string) (bool, error) {
	applied := false
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		applied, err = s.quarantine(ctx, tx, messageID, reason)
		return err
	})
	return applied, err
}

func scanDeadLetter(row scanner) (*aacp.DeadLetter, error) {
	var (
		d            aacp.DeadLetter
		seq, created int64
		typ, raw     string
	)
	if err := row.Scan(&d.MessageID, &d.RequestID, &d.SourceAgentID, &d.TargetAgentID, &seq, &typ, &raw,
		&d.Reason, &created); err != nil {
		return nil, err
	}
	d.Seq, d.MessageType, d.Raw, d.Timestamp = uint64(seq), aacp.MessageType(typ), []byte(raw), fromNanos(created)
	return &d, nil
}

// ListDeadLetters implements aacp.Store.
func (s *Store) ListDeadLetters(ctx context.Context, limit int) ([]*aacp.DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.stmts["deadLetters"].QueryContext(ctx, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*aacp.DeadLetter
	for rows.Next() {
		d, err := scanDeadLetter(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// RetryDeadLetter implements aacp.Store.
func (s *Store) RetryDeadLetter(ctx context.Context, messageID string, now time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		r, err := s.stmt(tx, ctx, "retryDead").ExecContext(ctx, now.UnixNano(), messageID)
		if err != nil {
			return err
		}
		if k, err := r.RowsAffected(); err != nil {
			return err
		} else if k == 0 {
			return fmt.Errorf("%w: dead letter %s", aacp.ErrNotFound, messageID)
		}
		return nil
	})
}

// DropDeadLetter implements aacp.Store.
func (s *Store) DropDeadLetter(ctx context.Context, messageID string) (*aacp.DeadLetter, error) {
	var d *aacp.DeadLetter
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		d, err = scanDeadLetter(s.stmt(tx, ctx, "deadLetter").QueryRowContext(ctx, messageID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: dead letter %s", aacp.ErrNotFound, messageID)
		} else if err != nil {
			return err
		}
		_, err = s.stmt(tx, ctx, "dropDead").ExecContext(ctx, messageID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}
