package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/keelmcp/keel/aacp"
)

// Grouped writes: the enqueues, resolutions and acknowledgments of a batch
// share their statements. Rather than a few statements per write, the batch
// as a whole reads the fences it needs (one statement), the pairs' last
// sequences (one), claims its request ids (one conditional insert),
// resolves its requests (one conditional update), raises the pairs'
// sequences (one upsert), stores its messages (one insert) and records its
// acknowledgments (two) with grouped statements (batch.go). On PostgreSQL
// the statements that do not need each other's results run together, as
// WITH queries of one statement (fences with sequences, claims with
// resolutions, sequence raises with message inserts, an acknowledgment's
// raise with its update): a batch of enqueues and resolutions is BEGIN,
// three statements and COMMIT. On SQLite, a handful of statements, whose
// fixed cost dominates a small write.
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
	current, last, err := s.readState(ctx, tx, ops)
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
	if live, err = checkSeqs(ops, live, results, last); err != nil {
		return err
	}
	if live, err = s.claimAndResolve(ctx, tx, ops, live, results); err != nil {
		return err
	}
	if err := s.storeMessages(ctx, tx, ops, live); err != nil {
		return err
	}
	if len(acks) > 0 {
		slices.SortStableFunc(acks, func(a, b aacp.Ack) int {
			return comparePairs(pairKey{a.Source, a.Target}, pairKey{b.Source, b.Target})
		})
		return s.execAcks(ctx, tx, acks)
	}
	return nil
}

// readState returns which of the fences named by ops are current (read
// FOR SHARE on PostgreSQL, so that a takeover waits for this transaction)
// and the last sequence of each pair whose message ops store (read FOR
// UPDATE on PostgreSQL; a pair without one is missing): on PostgreSQL in
// one statement, on SQLite in two.
func (s *Store) readState(ctx context.Context, tx *sql.Tx, ops []*writeOp) (map[aacp.Fence]bool, map[pairKey]uint64, error) {
	agents := map[string]bool{}
	var ids [][]any
	add := func(f aacp.Fence) {
		if !f.IsZero() && !agents[f.AgentID] {
			agents[f.AgentID] = true
			ids = append(ids, []any{f.AgentID})
		}
	}
	pairs := map[pairKey]bool{}
	var seqs [][]any
	for _, op := range ops {
		add(op.g.fence)
		for _, a := range op.g.acks {
			add(a.Fence)
		}
		if m := op.g.msg; m != nil {
			if p := (pairKey{m.Envelope.SourceAgentID, m.Envelope.TargetAgentID}); !pairs[p] {
				pairs[p] = true
				seqs = append(seqs, []any{p.source, p.target})
			}
		}
	}
	current := make(map[aacp.Fence]bool, len(ids))
	last := make(map[pairKey]uint64, len(seqs))
	scanFence := func(agent string, token int64) { current[aacp.Fence{AgentID: agent, Token: uint64(token)}] = true }
	if s.d == dialectPostgres && len(ids) > 0 && len(seqs) > 0 {
		args, err := pgJoinedArrays("fences", ids, "lastSeqs", seqs)
		if err != nil {
			return nil, nil, err
		}
		_, err = runStatement(ctx, tx, nil, pgReadState, args, func(rows *sql.Rows) error {
			var (
				first  string
				target sql.NullString
				n      int64
			)
			if err := rows.Scan(&first, &target, &n); err != nil {
				return err
			}
			if !target.Valid {
				scanFence(first, n)
			} else {
				last[pairKey{first, target.String}] = uint64(n)
			}
			return nil
		})
		return current, last, err
	}
	_, err := s.runRows(ctx, tx, "fences", ids, func(rows *sql.Rows) error {
		var (
			agent string
			token int64
		)
		if err := rows.Scan(&agent, &token); err != nil {
			return err
		}
		scanFence(agent, token)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	_, err = s.runRows(ctx, tx, "lastSeqs", seqs, func(rows *sql.Rows) error {
		var (
			p   pairKey
			seq int64
		)
		if err := rows.Scan(&p.source, &p.target, &seq); err != nil {
			return err
		}
		last[p] = uint64(seq)
		return nil
	})
	return current, last, err
}

// checkSeqs fails with aacp.ErrSeqConflict the writes of live whose
// message's seq is not above its pair's last sequence in last (a pair
// without one takes any seq, as a single write's upsert would), and
// returns the others. Two writes of one seq on a pair give up the grouped
// path.
func checkSeqs(ops []*writeOp, live []int, results []error, last map[pairKey]uint64) ([]int, error) {
	type pairSeq struct {
		p   pairKey
		seq uint64
	}
	seen := map[pairSeq]bool{}
	kept := live[:0]
	for _, i := range live {
		if m := ops[i].g.msg; m != nil {
			env := &m.Envelope
			p := pairKey{env.SourceAgentID, env.TargetAgentID}
			if seen[pairSeq{p, env.Seq}] {
				return nil, errUngrouped
			}
			seen[pairSeq{p, env.Seq}] = true
			if l, ok := last[p]; ok && env.Seq <= l {
				results[i] = fmt.Errorf("%w: %s→%s seq %d", aacp.ErrSeqConflict, env.SourceAgentID, env.TargetAgentID, env.Seq)
				continue
			}
		}
		kept = append(kept, i)
	}
	return kept, nil
}

// claimAndResolve claims the request ids of the enqueues of live with a
// conditional insert and applies the resolutions of live with a
// conditional update; on PostgreSQL the two run as one statement, unless
// the batch resolves a request it also claims (the update would not see
// the insert). An id recorded already (or claimed by an earlier write of
// the batch) fails its enqueue with aacp.ErrDuplicateRequest; a request
// final already is not resolved again (and its write stores nothing
// more); a missing one is aacp.ErrNotFound. Two resolutions of one request
// give up the grouped path. It returns the writes left to store their
// message.
func (s *Store) claimAndResolve(ctx context.Context, tx *sql.Tx, ops []*writeOp, live []int, results []error) ([]int, error) {
	var claims, resolves []int
	taken, resolving := map[string]bool{}, map[string]bool{}
	for _, i := range live {
		g := ops[i].g
		switch {
		case g.req != nil:
			if taken[g.reqID] {
				results[i] = fmt.Errorf("%w: %s", aacp.ErrDuplicateRequest, g.reqID)
				continue
			}
			taken[g.reqID] = true
			claims = append(claims, i)
		case g.res != nil:
			if resolving[g.resID] {
				return nil, errUngrouped
			}
			resolving[g.resID] = true
			resolves = append(resolves, i)
		}
	}
	var inserted, updated map[string]bool
	var err error
	together := s.d == dialectPostgres && len(claims) > 0 && len(resolves) > 0
	for id := range resolving {
		if taken[id] {
			together = false
		}
	}
	if together {
		inserted, updated, err = s.pgClaimAndResolve(ctx, tx, ops, claims, resolves)
	} else {
		if inserted, err = s.rowsIDs(ctx, tx, "claimRequests", ops, claims, func(g *grouped) []any { return g.req }); err == nil {
			updated, err = s.rowsIDs(ctx, tx, "resolve", ops, resolves, func(g *grouped) []any { return g.res })
		}
	}
	if err != nil {
		return nil, err
	}
	for _, i := range claims {
		if g := ops[i].g; !inserted[g.reqID] {
			results[i] = fmt.Errorf("%w: %s", aacp.ErrDuplicateRequest, g.reqID)
		}
	}
	kept := live[:0]
	for _, i := range live {
		if results[i] != nil {
			continue
		}
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

// pgClaimAndResolve runs pgClaimAndResolve in tx for the claims and the
// resolutions of ops, and returns the ids it inserted and those it
// resolved.
func (s *Store) pgClaimAndResolve(ctx context.Context, tx *sql.Tx, ops []*writeOp, claims, resolves []int) (inserted, updated map[string]bool, err error) {
	crows := make([][]any, len(claims))
	for k, i := range claims {
		crows[k] = ops[i].g.req
	}
	rrows := make([][]any, len(resolves))
	for k, i := range resolves {
		rrows[k] = ops[i].g.res
	}
	args, err := pgJoinedArrays("claimRequests", crows, "resolve", rrows)
	if err != nil {
		return nil, nil, err
	}
	inserted, updated = make(map[string]bool, len(claims)), make(map[string]bool, len(resolves))
	_, err = runStatement(ctx, tx, nil, pgClaimAndResolve, args, func(rows *sql.Rows) error {
		var (
			claimed bool
			id      string
		)
		if err := rows.Scan(&claimed, &id); err != nil {
			return err
		}
		if claimed {
			inserted[id] = true
		} else {
			updated[id] = true
		}
		return nil
	})
	return inserted, updated, err
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
	slices.SortFunc(order, comparePairs)
	seqs := make([][]any, len(order))
	for k, p := range order {
		seqs[k] = []any{p.source, p.target, int64(top[p])}
	}
	rows := make([][]any, len(msgs))
	for k, g := range msgs {
		rows[k] = g.msgArgs
	}
	if s.d == dialectPostgres {
		k, err := s.pgStoreMessages(ctx, tx, seqs, rows)
		if err == nil && k != int64(len(seqs)) {
			err = errUngrouped // a sequence moved since it was read
		}
		return err
	}
	k, err := s.runRows(ctx, tx, "raiseSeqs", seqs, nil)
	if err != nil {
		return err
	}
	if k != int64(len(seqs)) {
		return errUngrouped // a sequence moved since it was read
	}
	_, err = s.runRows(ctx, tx, "insertMessages", rows, nil)
	return err
}

// rowsIDs runs the grouped statement name (which returns the id of each
// row it wrote) on the rows row(g) of the writes ops[i] of idx, and
// returns the ids returned.
func (s *Store) rowsIDs(ctx context.Context, tx *sql.Tx, name string, ops []*writeOp, idx []int,
	row func(*grouped) []any) (map[string]bool, error) {
	ids := make(map[string]bool, len(idx))
	rows := make([][]any, len(idx))
	for k, i := range idx {
		rows[k] = row(ops[i].g)
	}
	_, err := s.runRows(ctx, tx, name, rows, func(rows *sql.Rows) error {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		ids[id] = true
		return nil
	})
	return ids, err
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
