package sqlstore

import (
	"context"
	"database/sql"
	"sync"

	"github.com/keelmcp/keel/aacp"
)

// Multi-row statements: one statement writes the rows of many writes, so
// that a batch costs a few statements (and, on PostgreSQL, a few round
// trips) rather than a few per write.

// multiRowSQL caches the multi-row statements by dialect, name and row
// count (multiRow).
var multiRowSQL sync.Map // multiRowKey → string

type multiRowKey struct {
	d    dialect
	name string
	n    int
}

// ackStatements returns the statements that record n acknowledgments: the
// upsert raising each pair's acknowledged seq, and the update marking the
// pairs' UNKNOWN messages at or below it COMPLETED. Their arguments are
// source, target and seq of each pair, in order.
func (d dialect) ackStatements(n int) (raise, mark string) {
	raise = d.multiRow("ackRaise", n)
	mark = d.multiRow("ackMark", n)
	return raise, mark
}

// execAcks records acks, sorted by pair, in tx: the acknowledged seq of
// each pair raised to the highest Seq given for it, and its UNKNOWN
// messages at or below it COMPLETED, with two statements per chunk of
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
	return chunks(s.d, merged, func(chunk []aacp.Ack) error {
		args := make([]any, 0, 3*len(chunk))
		for _, a := range chunk {
			args = append(args, a.Source, a.Target, int64(a.Seq))
		}
		raise, mark := s.d.ackStatements(len(chunk))
		if _, err := s.execTx(ctx, tx, raise, args...); err != nil {
			return err
		}
		_, err := s.execTx(ctx, tx, mark, args...)
		return err
	})
}
