package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keelmcp/keel/aacp"
)

// Grouped writes: the enqueues, resolutions and acknowledgments of a batch
// share their statements. Rather than a few statements per write, the
// batch as a whole reads the fences it needs (one statement), the pairs'
// last sequences (one), claims its request ids (one conditional insert),
// resolves its requests (one conditional update), raises the pairs'
// sequences (one upsert), stores its messages (one insert) and records its
// acknowledgments (two), each in chunks of at most groupChunk rows. On
// PostgreSQL that is a handful of round trips per batch; on SQLite a
// handful of statements, whose fixed cost dominates a small write.
//
// The writes of one batch are concurrent (each caller waits for its own
// commit), so any order of them is a valid one: the grouped path runs them
// as if the enqueues and resolutions came first in the order of their
// sequence numbers, then the acknowledgments. A write that cannot succeed
// (a stale fence, a request id recorded already, a sequence number not
// above the pair's last, a request final already or missing) is found
// before anything of it is written, so it fails alone, storing nothing,
// and the others commit. Anything the grouped path does not decide by
// itself (two writes of one batch using the same sequence number or
// resolving the same request, a statement failing) makes it give up: the
// transaction is rolled back and the batch runs again one write at a time
// (writer.go), which decides every case as the single writes do.

// groupChunk bounds the rows of one multi-row statement: on PostgreSQL,
// where each statement is a round trip, and on SQLite, whose driver binds
// a statement's arguments in time that grows with the square of their
// number.
func (d dialect) groupChunk() int {
	if d == dialectPostgres {
		return 128
	}
	return 16
}

// errUngrouped makes the grouped path give up (see above).
var errUngrouped = errors.New("sqlstore: batch needs its writes run one by one")

// grouped is the grouped form of a write: what it stores. A write has
// either acks (Acknowledge) or some of req, res and msg (Enqueue, Resolve).
type grouped struct {
	fence aacp.Fence
	// Enqueue: the request row it claims (requestArgs; nil: none).
	req   []any
	reqID string
	// Resolve: request_id, status, completion, result, error,
	// completion_ref, completed_at, attempts; applied reports whether it
	// applied.
	res     []any
	resID   string
	applied *bool
	// The message stored (nil: none) and its row (messageArgs).
	msg     *aacp.MessageRecord
	msgArgs []any
	// Acknowledge: its acks, and the errors of those skipped as stale.
	acks []aacp.Ack
	lost *[]error
}

// pairKey names a pair.
type pairKey struct{ source, target string }

// multiRows are the multi-row statements: head, row (repeated, joined by
// ", ") and tail. shareLock and updateLock mark their row locks.
var multiRows = map[string][3]string{
	"fences": {`SELECT agent_id, token FROM aacp_leases WHERE owner <> '' AND agent_id IN (`, "?",
		")" + shareLock},
	"lastSeqs": {`SELECT s.source_agent_id, s.target_agent_id, s.last_seq FROM (VALUES `, "(?, ?)",
		`) AS v JOIN aacp_sequences s ON s.source_agent_id = v.column1 AND s.target_agent_id = v.column2` + updateLock},
	"claimRequests": {`INSERT INTO aacp_requests (` + reqCols + `) VALUES `, "(" + reqVals + ")",
		` ON CONFLICT (request_id) DO NOTHING RETURNING request_id`},
	"resolve": {`UPDATE aacp_requests SET status = v.column2, completion = v.column3, result = v.column4,
			error = v.column5, completion_ref = v.column6, completed_at = v.column7,
			attempts = CASE WHEN v.column8 > 0 THEN v.column8 ELSE aacp_requests.attempts END FROM (VALUES `,
		"(?, ?, ?, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS INTEGER))",
		`) AS v WHERE aacp_requests.request_id = v.column1 AND aacp_requests.status = 'UNKNOWN'
			RETURNING aacp_requests.request_id`},
	"raiseSeqs": {`INSERT INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack) VALUES `,
		"(?, ?, ?, 0)", ` ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET last_seq = excluded.last_seq
			WHERE aacp_sequences.last_seq < excluded.last_seq`},
	"insertMessages": {`INSERT INTO aacp_messages (` + msgCols + `) VALUES `, "(" + msgVals + ")", ""},
	"ackRaise": {`INSERT INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack) VALUES `,
		"(?, ?, 0, CAST(? AS BIGINT))", ` ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET ack = excluded.ack
		WHERE aacp_sequences.ack < excluded.ack`},
	"ackMark": {`UPDATE aacp_messages SET status = 'COMPLETED' FROM (VALUES `, "(?, ?, CAST(? AS BIGINT))",
		`) AS a WHERE aacp_messages.source_agent_id = a.column1 AND aacp_messages.target_agent_id = a.column2
		AND aacp_messages.seq <= a.column3 AND aacp_messages.status = 'UNKNOWN'`},
}

// updateLock marks the queries that lock the sequence rows (alias s) they
// read on PostgreSQL.
const updateLock = " /*update s*/"

// multiRow returns the statement multiRows[name] with n rows, for the
// dialect, cached by name and n.
func (d dialect) multiRow(name string, n int) string {
	key := multiRowKey{d, name, n}
	if v, ok := multiRowSQL.Load(key); ok {
		return v.(string)
	}
	t := multiRows[name]
	head, row, tail := t[0], t[1], t[2]
	var b strings.Builder
	b.Grow(len(head) + n*(len(row)+2) + len(tail))
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	b.WriteString(tail)
	q := b.String()
	lock := ""
	if d == dialectPostgres {
		lock = " FOR UPDATE OF s"
	}
	q = d.rebind(strings.ReplaceAll(strings.ReplaceAll(q, shareLock, d.lockClause()), updateLock, lock))
	multiRowSQL.Store(key, q)
	return q
}

// chunks calls f with the rows of items in slices of at most
// d.groupChunk(), and stops at its first error.
func chunks[T any](d dialect, items []T, f func([]T) error) error {
	for len(items) > 0 {
		c := items[:min(len(items), d.groupChunk())]
		items = items[len(c):]
		if err := f(c); err != nil {
			return err
		}
	}
	return nil
}

// runGrouped runs the grouped writes ops in tx and sets each one's result
// in results (nil: applied, or an error of that write alone, which stored
// nothing). A non-nil error means tx must be rolled back: errUngrouped
// or the failure of a statement.
func (s *Store) runGrouped(ctx context.Context, tx *sql.Tx, ops []*writeOp, results []error) error {
	for _, op := range ops {
		if g := op.g; g.applied != nil {
			*g.applied = false
		} else if g.lost != nil {
			*g.lost = nil
		}
	}
	current, err := s.currentFences(ctx, tx, ops)
	if err != nil {
		return err
	}
	// The enqueues and resolutions whose fence is current, and the live
	// acknowledgments.
	var (
		live []int
		acks []aacp.Ack
	)
	for i, op := range ops {
		g := op.g
		if g.lost != nil {
			for _, a := range g.acks {
				if !a.Fence.IsZero() && !current[a.Fence] {
					*g.lost = append(*g.lost, fenceError(a.Fence))
					continue
				}
				acks = append(acks, a)
			}
			continue
		}
		if !g.fence.IsZero() && !current[g.fence] {
			results[i] = fenceError(g.fence)
			continue
		}
		live = append(live, i)
	}
	if live, err = s.checkSeqs(ctx, tx, ops, live, results); err != nil {
		return err
	}
	if live, err = s.claimRequests(ctx, tx, ops, live, results); err != nil {
		return err
	}
	if live, err = s.resolveRequests(ctx, tx, ops, live, results); err != nil {
		return err
	}
	if err := s.storeMessages(ctx, tx, ops, live); err != nil {
		return err
	}
	if len(acks) > 0 {
		slices.SortStableFunc(acks, func(a, b aacp.Ack) int {
			return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Target, b.Target))
		})
		return s.execAcks(ctx, tx, acks)
	}
	return nil
}

// currentFences returns which of the fences named by ops are current: read
// in one statement per chunk (FOR SHARE on PostgreSQL, so that a takeover
// waits for this transaction).
func (s *Store) currentFences(ctx context.Context, tx *sql.Tx, ops []*writeOp) (map[aacp.Fence]bool, error) {
	agents := map[string]bool{}
	var ids []any
	add := func(f aacp.Fence) {
		if !f.IsZero() && !agents[f.AgentID] {
			agents[f.AgentID] = true
			ids = append(ids, f.AgentID)
		}
	}
	for _, op := range ops {
		add(op.g.fence)
		for _, a := range op.g.acks {
			add(a.Fence)
		}
	}
	current := make(map[aacp.Fence]bool, len(ids))
	err := chunks(s.d, ids, func(c []any) error {
		q := s.d.multiRow("fences", len(c))
		rows, err := s.queryTx(ctx, tx, q, c...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				f     aacp.Fence
				token int64
			)
			if err := rows.Scan(&f.AgentID, &token); err != nil {
				return err
			}
			f.Token = uint64(token)
			current[f] = true
		}
		return rows.Err()
	})
	return current, err
}

// checkSeqs fails with aacp.ErrSeqConflict the writes of live whose
// message's seq is not above its pair's last sequence (read FOR UPDATE on
// PostgreSQL; a pair without one takes any seq, as a single write's
// upsert would), and returns the others. Two writes of one seq on a pair
// give up the grouped path.
func (s *Store) checkSeqs(ctx context.Context, tx *sql.Tx, ops []*writeOp, live []int, results []error) ([]int, error) {
	type pairSeq struct {
		p   pairKey
		seq uint64
	}
	seen := map[pairSeq]bool{}
	pairs := map[pairKey]bool{}
	var plist []pairKey
	for _, i := range live {
		m := ops[i].g.msg
		if m == nil {
			continue
		}
		p := pairKey{m.Envelope.SourceAgentID, m.Envelope.TargetAgentID}
		if seen[pairSeq{p, m.Envelope.Seq}] {
			return nil, errUngrouped
		}
		seen[pairSeq{p, m.Envelope.Seq}] = true
		if !pairs[p] {
			pairs[p] = true
			plist = append(plist, p)
		}
	}
	if len(plist) == 0 {
		return live, nil
	}
	last := make(map[pairKey]uint64, len(plist))
	err := chunks(s.d, plist, func(c []pairKey) error {
		args := make([]any, 0, 2*len(c))
		for _, p := range c {
			args = append(args, p.source, p.target)
		}
		q := s.d.multiRow("lastSeqs", len(c))
		rows, err := s.queryTx(ctx, tx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				p   pairKey
				seq int64
			)
			if err := rows.Scan(&p.source, &p.target, &seq); err != nil {
				return err
			}
			last[p] = uint64(seq)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	kept := live[:0]
	for _, i := range live {
		if m := ops[i].g.msg; m != nil {
			env := &m.Envelope
			if l, ok := last[pairKey{env.SourceAgentID, env.TargetAgentID}]; ok && env.Seq <= l {
				results[i] = fmt.Errorf("%w: %s→%s seq %d", aacp.ErrSeqConflict, env.SourceAgentID, env.TargetAgentID, env.Seq)
				continue
			}
		}
		kept = append(kept, i)
	}
	return kept, nil
}

// claimRequests claims the request ids of the enqueues of live with one
// conditional insert per chunk; those recorded already (or claimed by an
// earlier write of the batch) fail with aacp.ErrDuplicateRequest. It
// returns the writes left.
func (s *Store) claimRequests(ctx context.Context, tx *sql.Tx, ops []*writeOp, live []int, results []error) ([]int, error) {
	var claims []int
	taken := map[string]bool{}
	for _, i := range live {
		g := ops[i].g
		if g.req == nil {
			continue
		}
		if taken[g.reqID] {
			results[i] = fmt.Errorf("%w: %s", aacp.ErrDuplicateRequest, g.reqID)
			continue
		}
		taken[g.reqID] = true
		claims = append(claims, i)
	}
	if len(claims) == 0 {
		return withoutFailed(live, results), nil
	}
	inserted, err := s.rowsIDs(ctx, tx, "claimRequests", ops, claims, func(g *grouped) []any { return g.req })
	if err != nil {
		return nil, err
	}
	for _, i := range claims {
		if g := ops[i].g; !inserted[g.reqID] {
			results[i] = fmt.Errorf("%w: %s", aacp.ErrDuplicateRequest, g.reqID)
		}
	}
	return withoutFailed(live, results), nil
}

// resolveRequests applies the resolutions of live with one conditional
// update per chunk. Those whose request is final already are not applied
// (and store nothing more); a missing request is aacp.ErrNotFound. It
// returns the writes left to store their message. Two resolutions of one
// request give up the grouped path.
func (s *Store) resolveRequests(ctx context.Context, tx *sql.Tx, ops []*writeOp, live []int, results []error) ([]int, error) {
	var resolves []int
	ids := map[string]bool{}
	for _, i := range live {
		g := ops[i].g
		if g.res == nil {
			continue
		}
		if ids[g.resID] {
			return nil, errUngrouped
		}
		ids[g.resID] = true
		resolves = append(resolves, i)
	}
	if len(resolves) == 0 {
		return live, nil
	}
	updated, err := s.rowsIDs(ctx, tx, "resolve", ops, resolves, func(g *grouped) []any { return g.res })
	if err != nil {
		return nil, err
	}
	kept := live[:0]
	for _, i := range live {
		g := ops[i].g
		if g.res != nil {
			if !updated[g.resID] {
				// Final already (not applied), or missing.
				var one int
				err := s.stmt(tx, ctx, "requestExists").QueryRowContext(ctx, g.resID).Scan(&one)
				if errors.Is(err, sql.ErrNoRows) {
					results[i] = fmt.Errorf("%w: request %s", aacp.ErrNotFound, g.resID)
				} else if err != nil {
					return nil, err
				}
				continue
			}
			*g.applied = true
		}
		kept = append(kept, i)
	}
	return kept, nil
}

// storeMessages raises the pairs' last sequences to the highest seq of
// the messages of live (checked by checkSeqs) and inserts the messages.
func (s *Store) storeMessages(ctx context.Context, tx *sql.Tx, ops []*writeOp, live []int) error {
	var msgs []*grouped
	top := map[pairKey]uint64{}
	var order []pairKey
	for _, i := range live {
		g := ops[i].g
		if g.msg == nil {
			continue
		}
		msgs = append(msgs, g)
		env := &g.msg.Envelope
		p := pairKey{env.SourceAgentID, env.TargetAgentID}
		if _, ok := top[p]; !ok {
			order = append(order, p)
		}
		top[p] = max(top[p], env.Seq)
	}
	if len(msgs) == 0 {
		return nil
	}
	slices.SortFunc(order, func(a, b pairKey) int {
		return cmp.Or(strings.Compare(a.source, b.source), strings.Compare(a.target, b.target))
	})
	err := chunks(s.d, order, func(c []pairKey) error {
		args := make([]any, 0, 3*len(c))
		for _, p := range c {
			args = append(args, p.source, p.target, int64(top[p]))
		}
		q := s.d.multiRow("raiseSeqs", len(c))
		r, err := s.execTx(ctx, tx, q, args...)
		if err != nil {
			return err
		}
		if k, err := r.RowsAffected(); err != nil {
			return err
		} else if k != int64(len(c)) {
			return errUngrouped // a sequence moved since it was read
		}
		return nil
	})
	if err != nil {
		return err
	}
	return chunks(s.d, msgs, func(c []*grouped) error {
		args := make([]any, 0, 13*len(c))
		for _, g := range c {
			args = append(args, g.msgArgs...)
		}
		q := s.d.multiRow("insertMessages", len(c))
		_, err := s.execTx(ctx, tx, q, args...)
		return err
	})
}

// rowsIDs runs the multi-row statement name (which returns the id of each
// row it wrote) on the rows row(g) of the writes ops[i] of idx, in chunks,
// and returns the ids returned.
func (s *Store) rowsIDs(ctx context.Context, tx *sql.Tx, name string, ops []*writeOp, idx []int,
	row func(*grouped) []any) (map[string]bool, error) {
	ids := make(map[string]bool, len(idx))
	err := chunks(s.d, idx, func(c []int) error {
		var args []any
		for _, i := range c {
			args = append(args, row(ops[i].g)...)
		}
		return s.scanIDs(ctx, tx, s.d.multiRow(name, len(c)), args, ids)
	})
	return ids, err
}

// scanIDs runs q, which returns one id per row, and adds the ids to into.
func (s *Store) scanIDs(ctx context.Context, tx *sql.Tx, q string, args []any, into map[string]bool) error {
	rows, err := s.queryTx(ctx, tx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		into[id] = true
	}
	return rows.Err()
}

// withoutFailed returns the writes of live without a result yet.
func withoutFailed(live []int, results []error) []int {
	kept := live[:0]
	for _, i := range live {
		if results[i] == nil {
			kept = append(kept, i)
		}
	}
	return kept
}

// txStmt returns the statement q bound to tx when it was prepared at open
// (SQLite, whose driver would parse it every time it runs; see
// prepareGrouped), or else nil (PostgreSQL, whose driver caches the
// statements it prepares).
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	st := s.groupStmts[q]
	if st == nil {
		return nil, nil
	}
	return tx.StmtContext(ctx, st), nil
}

// prepareGrouped prepares the multi-row statements of every row count on
// the writer's connection (SQLite only).
func (s *Store) prepareGrouped(ctx context.Context) error {
	s.groupStmts = map[string]*sql.Stmt{}
	for name := range multiRows {
		for n := 1; n <= s.d.groupChunk(); n++ {
			q := s.d.multiRow(name, n)
			st, err := s.db.PrepareContext(ctx, q)
			if err != nil {
				return fmt.Errorf("sqlstore: prepare %s (%d rows): %w", name, n, err)
			}
			s.groupStmts[q] = st
		}
	}
	return nil
}

// execTx runs the statement q in tx (see txStmt).
func (s *Store) execTx(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	st, err := s.txStmt(ctx, tx, q)
	if err != nil || st == nil {
		if err != nil {
			return nil, err
		}
		return tx.ExecContext(ctx, q, args...)
	}
	return st.ExecContext(ctx, args...)
}

// queryTx runs the query q in tx (see txStmt).
func (s *Store) queryTx(ctx context.Context, tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
	st, err := s.txStmt(ctx, tx, q)
	if err != nil || st == nil {
		if err != nil {
			return nil, err
		}
		return tx.QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}
