package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/keelmcp/keel/aacp"
)

// Grouped statements: one statement writes (or reads) the rows of many
// writes, so that a batch costs a few statements (and, on PostgreSQL, a
// few round trips) rather than a few per write.
//
// On PostgreSQL each kind of row is one statement whatever the number of
// rows: its parameters are arrays, one per column, which unnest turns back
// into rows. The driver prepares it once per connection and the server
// plans it once, where a statement whose text depends on the row count
// would be a new statement (parsed, planned, cached) for every count. On
// SQLite, whose driver binds no arrays, a statement is a multi-row VALUES
// list of up to groupChunk rows, prepared for every row count when the
// store opens (prepareGrouped).

// rowStatement is one grouped statement. SQLite: head, row (repeated,
// joined by ", ") and tail, with ? placeholders (and no row locks: a
// transaction holds the database's write lock); its writes are OR FAIL,
// so that SQLite keeps no statement journal (a copy of every page a
// multi-row statement changes, to undo the statement alone): a failing
// statement keeps the rows it wrote before, and its caller always rolls
// back the whole transaction, or the write's savepoint, so none of them
// stays. PostgreSQL: pg, whose parameters
// $1, $2, ... are arrays of the columns cols describes, one letter each:
// t text, n text or NULL, b bigint, i integer.
type rowStatement struct {
	head, row, tail string
	pg              string
	cols            string
}

// groupChunk bounds the rows of one multi-row statement on SQLite, whose
// driver binds a statement's arguments in time that grows with the square
// of their number. PostgreSQL takes every row in one statement.
func (d dialect) groupChunk() int {
	if d == dialectPostgres {
		return 1 << 30
	}
	return 16
}

// The columns of the ledger's tables, in the order of reqCols and msgCols.
const (
	reqColKinds = "tttttttnntibbbb"
	msgColKinds = "ttttbtttbbibt"
)

// multiRows are the grouped statements by name.
var multiRows = map[string]rowStatement{
	"fences": {
		head: `SELECT agent_id, token FROM aacp_leases WHERE owner <> '' AND agent_id IN (`, row: "?", tail: ")",
		pg:   `SELECT agent_id, token FROM aacp_leases WHERE owner <> '' AND agent_id = ANY($1::text[]) FOR SHARE`,
		cols: "t"},
	"lastSeqs": {
		head: `SELECT s.source_agent_id, s.target_agent_id, s.last_seq FROM (VALUES `, row: "(?, ?)",
		tail: `) AS v JOIN aacp_sequences s ON s.source_agent_id = v.column1 AND s.target_agent_id = v.column2`,
		pg: `SELECT s.source_agent_id, s.target_agent_id, s.last_seq FROM unnest(` + pgArrayParams("tt") + `) AS v(source, target)
			JOIN aacp_sequences s ON s.source_agent_id = v.source AND s.target_agent_id = v.target FOR UPDATE OF s`,
		cols: "tt"},
	"claimRequests": {
		head: `INSERT OR FAIL INTO aacp_requests (` + reqCols + `) VALUES `, row: "(" + reqVals + ")",
		tail: ` ON CONFLICT (request_id) DO NOTHING RETURNING request_id`,
		pg: `INSERT INTO aacp_requests (` + reqCols + `) SELECT * FROM unnest(` + pgArrayParams(reqColKinds) + `)
			ON CONFLICT (request_id) DO NOTHING RETURNING request_id`,
		cols: reqColKinds},
	// A request is matched by its key alone and tested for being final
	// (not by status = 'UNKNOWN', which the index of pending requests
	// would answer: PostgreSQL then reads every entry of that index,
	// those of requests resolved since its last vacuum included, rather
	// than one key per row).
	"resolve": {
		head: `UPDATE OR FAIL aacp_requests SET status = v.column2, completion = v.column3, result = v.column4,
			error = v.column5, completion_ref = v.column6, completed_at = v.column7,
			attempts = CASE WHEN v.column8 > 0 THEN v.column8 ELSE aacp_requests.attempts END FROM (VALUES `,
		row: "(?, ?, ?, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS INTEGER))",
		tail: `) AS v WHERE aacp_requests.request_id = v.column1 AND aacp_requests.status NOT IN ('COMPLETED', 'FAILED')
			RETURNING aacp_requests.request_id`,
		pg: `UPDATE aacp_requests SET status = v.status, completion = v.completion, result = v.result,
			error = v.error, completion_ref = v.ref, completed_at = v.completed_at,
			attempts = CASE WHEN v.attempts > 0 THEN v.attempts ELSE aacp_requests.attempts END
			FROM unnest(` + pgArrayParams("tttnntbi") + `) AS v(id, status, completion, result, error, ref, completed_at, attempts)
			WHERE aacp_requests.request_id = v.id AND aacp_requests.status NOT IN ('COMPLETED', 'FAILED')
			RETURNING aacp_requests.request_id`,
		cols: "tttnntbi"},
	"raiseSeqs": {
		head: `INSERT OR FAIL INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack) VALUES `, row: "(?, ?, ?, 0)",
		tail: ` ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET last_seq = excluded.last_seq
			WHERE aacp_sequences.last_seq < excluded.last_seq`,
		pg: `INSERT INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack)
			SELECT v.source, v.target, v.seq, 0 FROM unnest(` + pgArrayParams("ttb") + `) AS v(source, target, seq)
			ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET last_seq = excluded.last_seq
			WHERE aacp_sequences.last_seq < excluded.last_seq`,
		cols: "ttb"},
	"insertMessages": {
		head: `INSERT OR FAIL INTO aacp_messages (` + msgCols + `) VALUES `, row: "(" + msgVals + ")",
		pg:   `INSERT INTO aacp_messages (` + msgCols + `) SELECT * FROM unnest(` + pgArrayParams(msgColKinds) + `)`,
		cols: msgColKinds},
	"ackRaise": {
		head: `INSERT OR FAIL INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack) VALUES `,
		row:  "(?, ?, 0, CAST(? AS BIGINT))",
		tail: ` ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET ack = excluded.ack
			WHERE aacp_sequences.ack < excluded.ack`,
		pg: `INSERT INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack)
			SELECT v.source, v.target, 0, v.seq FROM unnest(` + pgArrayParams("ttb") + `) AS v(source, target, seq)
			ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET ack = excluded.ack
			WHERE aacp_sequences.ack < excluded.ack`,
		cols: "ttb"},
	"ackMark": {
		head: `UPDATE OR FAIL aacp_messages SET status = 'COMPLETED' FROM (VALUES `, row: "(?, ?, CAST(? AS BIGINT))",
		tail: `) AS a WHERE aacp_messages.source_agent_id = a.column1 AND aacp_messages.target_agent_id = a.column2
			AND aacp_messages.seq <= a.column3 AND aacp_messages.status = 'UNKNOWN'`,
		pg: `UPDATE aacp_messages SET status = 'COMPLETED' FROM unnest(` + pgArrayParams("ttb") + `) AS a(source, target, seq)
			WHERE aacp_messages.source_agent_id = a.source AND aacp_messages.target_agent_id = a.target
			AND aacp_messages.seq <= a.seq AND aacp_messages.status = 'UNKNOWN'`,
		cols: "ttb"},
}

// pgArrayParams returns the array parameters $1, $2, ... of the columns
// cols (see rowStatement), cast to their array types.
func pgArrayParams(cols string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d::", i+1)
		switch c {
		case 't', 'n':
			b.WriteString("text[]")
		case 'b':
			b.WriteString("bigint[]")
		case 'i':
			b.WriteString("integer[]")
		default:
			panic("sqlstore: unknown column kind " + string(c))
		}
	}
	return b.String()
}

// multiRowSQL caches the SQLite multi-row statements by name and row
// count (multiRow).
var multiRowSQL sync.Map // multiRowKey → string

type multiRowKey struct {
	name string
	n    int
}

// multiRow returns the SQLite statement multiRows[name] with n rows,
// cached by name and n.
func multiRow(name string, n int) string {
	key := multiRowKey{name, n}
	if v, ok := multiRowSQL.Load(key); ok {
		return v.(string)
	}
	t := multiRows[name]
	var b strings.Builder
	b.Grow(len(t.head) + n*(len(t.row)+2) + len(t.tail))
	b.WriteString(t.head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.row)
	}
	b.WriteString(t.tail)
	q := b.String()
	multiRowSQL.Store(key, q)
	return q
}

// pgArrays turns rows (each with a value per column of cols) into the
// arrays of a PostgreSQL grouped statement, one per column.
func pgArrays(cols string, rows [][]any) ([]any, error) {
	arrays := make([]any, len(cols))
	for k, c := range cols {
		switch c {
		case 't':
			a := make([]string, len(rows))
			for r, row := range rows {
				v, ok := row[k].(string)
				if !ok {
					return nil, fmt.Errorf("sqlstore: column %d: %T is not text", k+1, row[k])
				}
				a[r] = v
			}
			arrays[k] = a
		case 'n':
			a := make([]*string, len(rows))
			for r, row := range rows {
				switch v := row[k].(type) {
				case nil:
				case string:
					a[r] = &v
				default:
					return nil, fmt.Errorf("sqlstore: column %d: %T is not text", k+1, row[k])
				}
			}
			arrays[k] = a
		default: // 'b', 'i'
			a := make([]int64, len(rows))
			for r, row := range rows {
				switch v := row[k].(type) {
				case int64:
					a[r] = v
				case int:
					a[r] = int64(v)
				default:
					return nil, fmt.Errorf("sqlstore: column %d: %T is not an integer", k+1, row[k])
				}
			}
			arrays[k] = a
		}
	}
	return arrays, nil
}

// runRows runs the grouped statement name on rows in tx: on PostgreSQL
// once, on SQLite in chunks of up to groupChunk rows. With scan, the
// statement returns rows and scan reads each; otherwise runRows returns
// the number of rows it changed.
func (s *Store) runRows(ctx context.Context, tx *sql.Tx, name string, rows [][]any, scan func(*sql.Rows) error) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	if s.d == dialectPostgres {
		st := multiRows[name]
		args, err := pgArrays(st.cols, rows)
		if err != nil {
			return 0, err
		}
		return runStatement(ctx, tx, nil, st.pg, args, scan)
	}
	total := int64(0)
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), s.d.groupChunk())]
		rows = rows[len(chunk):]
		args := make([]any, 0, len(chunk)*len(chunk[0]))
		for _, r := range chunk {
			args = append(args, r...)
		}
		q := multiRow(name, len(chunk))
		var st *sql.Stmt
		if p := s.groupStmts[q]; p != nil {
			st = tx.StmtContext(ctx, p)
		}
		k, err := runStatement(ctx, tx, st, q, args, scan)
		if err != nil {
			return total, err
		}
		total += k
	}
	return total, nil
}

// runStatement runs q (prepared as st, if not nil) in tx with args, as
// runRows says.
func runStatement(ctx context.Context, tx *sql.Tx, st *sql.Stmt, q string, args []any, scan func(*sql.Rows) error) (int64, error) {
	if scan == nil {
		var (
			r   sql.Result
			err error
		)
		if st != nil {
			r, err = st.ExecContext(ctx, args...)
		} else {
			r, err = tx.ExecContext(ctx, q, args...)
		}
		if err != nil {
			return 0, err
		}
		return r.RowsAffected()
	}
	var (
		rows *sql.Rows
		err  error
	)
	if st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = tx.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := int64(0)
	for rows.Next() {
		if err := scan(rows); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// prepareGrouped prepares the multi-row statements of every row count on
// the writer's connection (SQLite only: its driver would parse them every
// time they run, where pgx caches the statements it prepares).
func (s *Store) prepareGrouped(ctx context.Context) error {
	s.groupStmts = map[string]*sql.Stmt{}
	for name := range multiRows {
		for n := 1; n <= s.d.groupChunk(); n++ {
			q := multiRow(name, n)
			st, err := s.db.PrepareContext(ctx, q)
			if err != nil {
				return fmt.Errorf("sqlstore: prepare %s (%d rows): %w", name, n, err)
			}
			s.groupStmts[q] = st
		}
	}
	return nil
}

// execAcks records acks, sorted by pair, in tx: the acknowledged seq of
// each pair raised to the highest Seq given for it, and its UNKNOWN
// messages at or below it COMPLETED, with two grouped statements.
func (s *Store) execAcks(ctx context.Context, tx *sql.Tx, acks []aacp.Ack) error {
	rows := make([][]any, 0, len(acks))
	var last *aacp.Ack
	for i := range acks {
		a := &acks[i]
		if last != nil && last.Source == a.Source && last.Target == a.Target {
			if k := len(rows) - 1; int64(a.Seq) > rows[k][2].(int64) {
				rows[k][2] = int64(a.Seq)
			}
			continue
		}
		last = a
		rows = append(rows, []any{a.Source, a.Target, int64(a.Seq)})
	}
	if s.d == dialectPostgres {
		// One statement, one round trip: the raise as a WITH query, then
		// the update, on the same arrays.
		args, err := pgArrays(multiRows["ackMark"].cols, rows)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, pgAcks, args...)
		return err
	}
	if _, err := s.runRows(ctx, tx, "ackRaise", rows, nil); err != nil {
		return err
	}
	_, err := s.runRows(ctx, tx, "ackMark", rows, nil)
	return err
}

// On PostgreSQL, statements that follow each other in a batch without
// depending on each other's results run as one, the first as a WITH query:
// one round trip rather than two.
var (
	// pgAcks records acknowledgments (ackRaise, then ackMark).
	pgAcks = `WITH raised AS (` + multiRows["ackRaise"].pg + `) ` + multiRows["ackMark"].pg
	// pgStoreMessages raises sequences (ackRaise's arrays) and inserts
	// messages (the arrays that follow), and returns how many sequences it
	// raised.
	// pgReadState reads the current fences (fences' arrays) and the
	// pairs' last sequences (lastSeqs' arrays, next): a fence's row has a
	// NULL second column.
	pgReadState = `WITH f AS (` + multiRows["fences"].pg + `), q AS (` +
		shiftParams(multiRows["lastSeqs"].pg, len(multiRows["fences"].cols)) + `)
		SELECT agent_id, NULL, token FROM f UNION ALL SELECT source_agent_id, target_agent_id, last_seq FROM q`
	// pgClaimAndResolve claims request ids (claimRequests' arrays) and
	// resolves requests (resolve's arrays, next), and returns true and
	// each id claimed, false and each id resolved.
	pgClaimAndResolve = `WITH c AS (` + multiRows["claimRequests"].pg + `), r AS (` +
		shiftParams(multiRows["resolve"].pg, len(multiRows["claimRequests"].cols)) + `)
		SELECT true, request_id FROM c UNION ALL SELECT false, request_id FROM r`
	pgStoreMessages = `WITH raised AS (` + multiRows["raiseSeqs"].pg + ` RETURNING 1), inserted AS (` +
		shiftParams(multiRows["insertMessages"].pg, len(multiRows["raiseSeqs"].cols)) + `) SELECT count(*) FROM raised`
)

// shiftParams returns q with its parameters $1, $2, ... renumbered from
// $by+1.
func shiftParams(q string, by int) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		b.WriteByte(q[i])
		if q[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		if j == i+1 {
			continue
		}
		n, _ := strconv.Atoi(q[i+1 : j])
		b.WriteString(strconv.Itoa(n + by))
		i = j - 1
	}
	return b.String()
}

// pgStoreMessages runs the statement pgStoreMessages in tx: seqs are rows
// of raiseSeqs, msgs rows of insertMessages. It returns how many
// sequences it raised.
func (s *Store) pgStoreMessages(ctx context.Context, tx *sql.Tx, seqs, msgs [][]any) (int64, error) {
	args, err := pgJoinedArrays("raiseSeqs", seqs, "insertMessages", msgs)
	if err != nil {
		return 0, err
	}
	var raised int64
	err = tx.QueryRowContext(ctx, pgStoreMessages, args...).Scan(&raised)
	return raised, err
}

// pgJoinedArrays returns the arguments of a statement joining two grouped
// statements: the arrays of first on firstRows, then those of second on
// secondRows.
func pgJoinedArrays(first string, firstRows [][]any, second string, secondRows [][]any) ([]any, error) {
	a, err := pgArrays(multiRows[first].cols, firstRows)
	if err != nil {
		return nil, err
	}
	b, err := pgArrays(multiRows[second].cols, secondRows)
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// comparePairs orders pairs by source, then target.
func comparePairs(a, b pairKey) int {
	return cmp.Or(strings.Compare(a.source, b.source), strings.Compare(a.target, b.target))
}
