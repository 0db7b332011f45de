package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"github.com/keelmcp/keel/aacp"
)

// Multi-row statements: one statement writes the rows of many writes, so
// that a batch costs a few statements (and, on PostgreSQL, a few round
// trips) rather than a few per write.

// ackChunk bounds the pairs of one multi-row acknowledgment statement.
const ackChunk = 128

// ackSQL caches the acknowledgment statements by dialect and pair count.
var ackSQL sync.Map // ackKey → [2]string

type ackKey struct {
	d dialect
	n int
}

// ackStatements returns the statements that record n acknowledgments: the
// upsert raising each pair's acknowledged seq, and the update marking the
// pairs' UNKNOWN messages at or below it COMPLETED. Their arguments are
// source, target and seq of each pair, in order.
func (d dialect) ackStatements(n int) (raise, mark string) {
	if v, ok := ackSQL.Load(ackKey{d, n}); ok {
		q := v.([2]string)
		return q[0], q[1]
	}
	var r, m strings.Builder
	r.WriteString(`INSERT INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack) VALUES `)
	m.WriteString(`UPDATE aacp_messages SET status = 'COMPLETED' FROM (VALUES `)
	for i := range n {
		if i > 0 {
			r.WriteString(", ")
			m.WriteString(", ")
		}
		r.WriteString("(?, ?, 0, CAST(? AS BIGINT))")
		m.WriteString("(?, ?, CAST(? AS BIGINT))")
	}
	r.WriteString(` ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET ack = excluded.ack
		WHERE aacp_sequences.ack < excluded.ack`)
	m.WriteString(`) AS a WHERE aacp_messages.source_agent_id = a.column1 AND aacp_messages.target_agent_id = a.column2
		AND aacp_messages.seq <= a.column3 AND aacp_messages.status = 'UNKNOWN'`)
	q := [2]string{d.rebind(r.String()), d.rebind(m.String())}
	ackSQL.Store(ackKey{d, n}, q)
	return q[0], q[1]
}

// execAcks records acks, sorted by pair, in tx: the acknowledged seq of
// each pair raised to the highest Seq given for it, and its UNKNOWN
// messages at or below it COMPLETED, with two statements per ackChunk
// pairs.
func (s *Store) execAcks(ctx context.Context, tx *sql.Tx, acks []aacp.Ack) error {
	merged := make([]aacp.Ack, 0, len(acks))
	for _, a := range acks {
		if k := len(merged) - 1; k >= 0 && merged[k].Source == a.Source && merged[k].Target == a.Target {
			merged[k].Seq = max(merged[k].Seq, a.Seq)
			continue
		}
		merged = append(merged, a)
	}
	args := make([]any, 0, 3*min(len(merged), ackChunk))
	for len(merged) > 0 {
		chunk := merged[:min(len(merged), ackChunk)]
		merged = merged[len(chunk):]
		args = args[:0]
		for _, a := range chunk {
			args = append(args, a.Source, a.Target, int64(a.Seq))
		}
		raise, mark := s.d.ackStatements(len(chunk))
		if _, err := tx.ExecContext(ctx, raise, args...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, mark, args...); err != nil {
			return err
		}
	}
	return nil
}
