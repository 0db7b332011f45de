// Package sqlstore is the durable aacp.Store: one schema on database/sql
// for SQLite (the embedded default: modernc.org/sqlite, pure Go, so a
// program needs only a file path) and PostgreSQL (the pgx driver), so that
// several processes can share one ledger.
//
// Open a store with OpenSQLite (a file; WAL journal, a busy timeout,
// synchronous=FULL, immediate transactions) or OpenPostgres (a DSN); both
// bring the schema up to date with versioned migrations (table
// aacp_schema_migrations) before returning. Every operation that must be
// atomic (Enqueue, Resolve, Acknowledge, ClaimDue) runs in one transaction,
// so a status is durable before the call returns.
//
// Group commit: the writes of concurrent callers share transactions. A
// writer goroutine (one on SQLite, which has one writer at a time;
// WithWriters on PostgreSQL, sharing one pool of connections with the
// reads) takes every write queued at that moment, up to WithMaxBatch, runs
// them in one transaction and commits once, so that the commit and its
// fsync are paid once per batch, not once per write; the more callers wait,
// the larger the batch. The enqueues, resolutions and acknowledgments of a
// batch also share their statements: one statement per kind of row (fence
// check, sequence check, request claim, resolution, sequence raise, message
// insert, acknowledgment) for the whole batch rather than a few per write.
// On PostgreSQL such a statement takes one array parameter per column, so
// it is one prepared statement whatever the batch's size, and statements
// that do not depend on each other's results share a round trip (the fence
// check with the sequence check, the request claims with the resolutions,
// the sequence raise with the message insert, an acknowledgment's raise
// with its update): a batch of enqueues and resolutions is BEGIN, three
// statements and COMMIT. On SQLite it is a multi-row statement of up to 16
// rows, prepared for every row count when the store opens. A write that
// cannot succeed (a stale fence, a request id recorded already, a sequence
// number already used, a request final already or missing) is found before
// anything of it is written: it fails alone, storing nothing, and the
// others commit. A batch that shares statements cannot decide (two of its
// writes using one sequence number, or resolving one request, or a
// statement failing) runs again one write at a time, each with a savepoint
// of its own, so that a failing write undoes only itself. Each call still
// returns only after its own transaction committed, with the durability the
// database is configured for (synchronous=FULL on SQLite by default;
// synchronous_commit and fsync on PostgreSQL). On PostgreSQL, the writes
// that change one pair's sequence row always go to the same writer, so that
// two writers never wait for each other's sequence rows; the other writes
// (claims, lease operations, retry updates) go to the writers in turn, and
// two writers' transactions can then wait for each other's rows: PostgreSQL
// breaks such a cycle after its deadlock_timeout by aborting one of them,
// whose writes run again in a later transaction. On SQLite, reads go
// through read-only connections of their own (WithReadConns; WAL lets them
// read while the writer commits), so they never wait behind a batch; on
// PostgreSQL they share the writers' pool.
//
// Plans: every statement of the ledger reads or writes its rows by key or
// by a range of an index. On PostgreSQL, whose tables here change faster
// than their statistics, the store's transactions begin with SET LOCAL
// enable_seqscan, enable_bitmapscan, enable_hashjoin and enable_mergejoin
// = off (sent with BEGIN and ending with the transaction, so sessions
// keep the server's settings; not for a setting that the DSN, the
// server's configuration, the database or the role sets; not at all with
// WithPlannerSettings(false)), so that no plan made while a table was
// small (a sequential scan, a hash join, a bitmap of a whole partial
// index) stays cached as it grows, and no statement reads the index
// entries of rows changed since the last vacuum beyond those it names.
//
// Claims: on PostgreSQL, ClaimDue selects due rows with FOR UPDATE SKIP
// LOCKED, so concurrent pollers never claim the same message and never wait
// for each other; on SQLite, the claim is one immediate (write-locked)
// transaction that moves the rows' next_retry_at past the lease and records
// the owner in claimed_by.
//
// Agent leases live in table aacp_leases (schema version 2, added to older
// databases on open without touching their data). A write fenced by a
// lease (a claim, an acknowledgment, an enqueue, a retry, a resolution)
// reads the lease row in its own transaction (FOR SHARE on PostgreSQL), so
// a takeover is ordered entirely before or after it.
//
// Enqueue claims a request id with a conditional insert (INSERT ... ON
// CONFLICT DO NOTHING) in the transaction that stores the message. A row
// whose envelope cannot be decoded is quarantined by the claim that meets
// it (schema version 3: column dead_reason), so one bad row never fails a
// poll; reads that list messages skip such rows. A request row that
// cannot be decoded (its error column) is skipped by ListPendingRequests
// and read by GetRequestRecord only after it is repaired: the request ends
// FAILED (completion protocol_error) with the decode failure as its error,
// so it never stops a Start or a recovery, and is not delivered forever.
//
// On SQLite the messages and requests are rowid tables with unique ids
// (schema version 4): a database of an older version is rebuilt on its
// first open by this version, rows and indexes kept, in the migration's
// one transaction (its time grows with the ledger's size). Nothing changes
// on PostgreSQL.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/mcp"
)

// Store is an aacp.Store on a SQL database. It is safe for concurrent use,
// also by several processes sharing the database.
type Store struct {
	db  *sql.DB // the writers' connections (migrations too)
	rdb *sql.DB // the readers' connections (db itself on PostgreSQL)
	d   dialect
	cfg config
	// stmts are the prepared statements run outside the writers'
	// transactions (reads, on rdb); txStmts those the writers run (on db).
	stmts, txStmts map[string]*sql.Stmt
	// groupStmts are the grouped writes' statements by query (txStmt),
	// read-only once open.
	groupStmts map[string]*sql.Stmt
	// groupedRuns and ungroupedRuns count the batches whose grouped
	// writes shared their statements, and those where that gave up
	// (group.go).
	groupedRuns, ungroupedRuns atomic.Int64
	closeOnce                  sync.Once
	queues                     []chan *writeOp // one per writer
	turn                       atomic.Uint64   // the queue of the next write without a pair
	seed                       maphash.Seed    // of pairWriter
	stopped                    chan struct{}   // closed by Close
	writersDone                sync.WaitGroup
}

var _ aacp.Store = (*Store)(nil)

const (
	reqCols = `request_id, source_agent_id, target_agent_id, message_type, payload, status, completion, result, error,
		completion_ref, attempts, deadline, created_at, completed_at, expires_at`
	reqVals = `?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`
	msgCols = `message_id, request_id, source_agent_id, target_agent_id, seq, message_type, envelope, status,
		created_at, expires_at, retry_count, next_retry_at, claimed_by`
	msgVals = `?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`
	// msgScan are the columns scanMessage reads.
	msgScan = `message_id, request_id, envelope, status, created_at, expires_at, retry_count, next_retry_at, claimed_by,
		dead_reason, source_agent_id, target_agent_id, seq, message_type`
)

var queries = map[string]string{
	"insertRequest": `INSERT INTO aacp_requests (` + reqCols + `) VALUES (` + reqVals + `) ON CONFLICT (request_id) DO NOTHING`,
	"upsertRequest": `INSERT INTO aacp_requests (` + reqCols + `) VALUES (` + reqVals + `) ON CONFLICT (request_id) DO UPDATE SET
		source_agent_id = excluded.source_agent_id, target_agent_id = excluded.target_agent_id,
		message_type = excluded.message_type, payload = excluded.payload, status = excluded.status,
		completion = excluded.completion, result = excluded.result, error = excluded.error,
		completion_ref = excluded.completion_ref, attempts = excluded.attempts, deadline = excluded.deadline,
		created_at = excluded.created_at, completed_at = excluded.completed_at, expires_at = excluded.expires_at`,
	"insertMessage": `INSERT INTO aacp_messages (` + msgCols + `) VALUES (` + msgVals + `)`,
	"upsertMessage": `INSERT INTO aacp_messages (` + msgCols + `) VALUES (` + msgVals + `) ON CONFLICT (message_id) DO UPDATE SET
		request_id = excluded.request_id, source_agent_id = excluded.source_agent_id,
		target_agent_id = excluded.target_agent_id, seq = excluded.seq, message_type = excluded.message_type,
		envelope = excluded.envelope, status = excluded.status, created_at = excluded.created_at,
		expires_at = excluded.expires_at, retry_count = excluded.retry_count,
		next_retry_at = excluded.next_retry_at, claimed_by = excluded.claimed_by`,
	"raiseSeq": `INSERT INTO aacp_sequences (source_agent_id, target_agent_id, last_seq, ack) VALUES (?, ?, ?, 0)
		ON CONFLICT (source_agent_id, target_agent_id) DO UPDATE SET last_seq = excluded.last_seq
		WHERE aacp_sequences.last_seq < excluded.last_seq`,
	"getRequest":    `SELECT ` + reqCols + ` FROM aacp_requests WHERE request_id = ?`,
	"getMessage":    `SELECT ` + msgScan + ` FROM aacp_messages WHERE message_id = ?`,
	"requestExists": `SELECT 1 FROM aacp_requests WHERE request_id = ?`,
	"resolve": `UPDATE aacp_requests SET status = ?, completion = ?, result = ?, error = ?, completion_ref = ?,
		completed_at = ?, attempts = CASE WHEN CAST(? AS INTEGER) > 0 THEN CAST(? AS INTEGER) ELSE attempts END
		WHERE request_id = ? AND status = 'UNKNOWN'`,
	"getLastSeq":    `SELECT last_seq FROM aacp_sequences WHERE source_agent_id = ? AND target_agent_id = ?`,
	"getAck":        `SELECT ack FROM aacp_sequences WHERE source_agent_id = ? AND target_agent_id = ?`,
	"unacked":       `SELECT envelope FROM aacp_messages WHERE source_agent_id = ? AND target_agent_id = ? AND status = 'UNKNOWN' ORDER BY seq`,
	"pending":       `SELECT ` + reqCols + ` FROM aacp_requests WHERE status = 'UNKNOWN' AND (CAST(? AS BIGINT) = 0 OR created_at < ?) ORDER BY created_at, request_id`,
	"inState":       `SELECT ` + msgScan + ` FROM aacp_messages WHERE status = ? AND (CAST(? AS BIGINT) = 0 OR created_at < ?) ORDER BY created_at, seq`,
	"purgeRequests": `DELETE FROM aacp_requests WHERE expires_at <> 0 AND expires_at <= ?`,
	"purgeMessages": `DELETE FROM aacp_messages WHERE expires_at <> 0 AND expires_at <= ?`,
	"claimUpdate":   `UPDATE aacp_messages SET retry_count = ?, claimed_by = ?, next_retry_at = ? WHERE message_id = ?`,
}

// retryable reports transient errors: PostgreSQL serialization failures
// and deadlocks, SQLite busy or locked databases.
func retryable(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "40001" || pg.Code == "40P01"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

func (s *Store) stmt(tx *sql.Tx, ctx context.Context, name string) *sql.Stmt {
	if tx == nil {
		return s.stmts[name]
	}
	return tx.StmtContext(ctx, s.txStmts[name])
}

// nanos stores a time as Unix nanoseconds; the zero time is 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func nullText(v jsontext.Value) any {
	if len(v) == 0 {
		return nil
	}
	return string(v)
}

func encodeError(se *mcp.StructuredError) (any, error) {
	if se == nil {
		return nil, nil
	}
	b, err := jsonv2.Marshal(se, jsonv2.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: encode error: %w", err)
	}
	return string(b), nil
}

func requestArgs(r *aacp.RequestRecord) ([]any, error) {
	errText, err := encodeError(r.Error)
	if err != nil {
		return nil, err
	}
	payload := string(r.Payload)
	if payload == "" {
		payload = "null"
	}
	return []any{r.RequestID, r.SourceAgentID, r.TargetAgentID, string(r.MessageType), payload, string(r.Status),
		string(r.Completion), nullText(jsontext.Value(r.Result)), errText, r.CompletionRef, r.Attempts, nanos(r.Deadline),
		nanos(r.Timestamp), nanos(r.CompletedAt), nanos(r.ExpiresAt)}, nil
}

func messageArgs(m *aacp.MessageRecord) ([]any, error) {
	env, err := aacp.EncodeEnvelope(&m.Envelope)
	if err != nil {
		return nil, err
	}
	return []any{m.MessageID, m.RequestID, m.Envelope.SourceAgentID, m.Envelope.TargetAgentID, int64(m.Envelope.Seq),
		string(m.Envelope.MessageType), string(env), string(m.Status), nanos(m.Timestamp), nanos(m.ExpiresAt),
		m.RetryCount, nanos(m.NextRetryAt), m.ClaimedBy}, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRequest(row scanner) (*aacp.RequestRecord, error) {
	var (
		r                                              aacp.RequestRecord
		typ, payload, status, completion               string
		result, errText                                sql.NullString
		deadline, created, completed, expires, attempt int64
	)
	if err := row.Scan(&r.RequestID, &r.SourceAgentID, &r.TargetAgentID, &typ, &payload, &status, &completion,
		&result, &errText, &r.CompletionRef, &attempt, &deadline, &created, &completed, &expires); err != nil {
		return nil, err
	}
	r.MessageType, r.Payload, r.Status, r.Completion = aacp.MessageType(typ), json.RawMessage(payload), aacp.Outcome(status), aacp.Completion(completion)
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	if errText.Valid {
		r.Error = new(mcp.StructuredError)
		if err := jsonv2.Unmarshal([]byte(errText.String), r.Error); err != nil {
			return nil, &badRequestRow{id: r.RequestID, err: fmt.Errorf("error column: %w", err)}
		}
	}
	r.Attempts = int(attempt)
	r.Deadline, r.Timestamp, r.CompletedAt, r.ExpiresAt = fromNanos(deadline), fromNanos(created), fromNanos(completed), fromNanos(expires)
	return &r, nil
}

func scanMessage(row scanner) (*aacp.MessageRecord, error) {
	m, raw, err := scanMessageRow(row)
	if err != nil {
		return nil, err
	}
	if err := decodeStored(m, raw); err != nil {
		return nil, err
	}
	return m, nil
}

// scanMessageRow reads the msgScan columns of a row: the record with the
// envelope's ids, agents, seq and type from their columns, and the stored
// envelope, not decoded yet.
func scanMessageRow(row scanner) (*aacp.MessageRecord, []byte, error) {
	var (
		m                      aacp.MessageRecord
		env, status, typ       string
		created, expires, next int64
		retries, seq           int64
	)
	if err := row.Scan(&m.MessageID, &m.RequestID, &env, &status, &created, &expires, &retries, &next, &m.ClaimedBy,
		&m.DeadReason, &m.Envelope.SourceAgentID, &m.Envelope.TargetAgentID, &seq, &typ); err != nil {
		return nil, nil, err
	}
	m.Status, m.RetryCount = aacp.Outcome(status), int(retries)
	m.Timestamp, m.ExpiresAt, m.NextRetryAt = fromNanos(created), fromNanos(expires), fromNanos(next)
	m.Envelope.MessageID, m.Envelope.RequestID = m.MessageID, m.RequestID
	m.Envelope.Seq, m.Envelope.MessageType = uint64(seq), aacp.MessageType(typ)
	return &m, []byte(env), nil
}

// decodeStored decodes the stored envelope raw into m.Envelope.
func decodeStored(m *aacp.MessageRecord, raw []byte) error {
	e, err := aacp.DecodeEnvelope(raw)
	if err != nil {
		return fmt.Errorf("sqlstore: message %s: %w", m.MessageID, err)
	}
	m.Envelope = *e
	return nil
}

// PutRequestRecord implements aacp.Store.
func (s *Store) PutRequestRecord(ctx context.Context, rec *aacp.RequestRecord) error {
	args, err := requestArgs(rec)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.stmt(tx, ctx, "upsertRequest").ExecContext(ctx, args...)
		return err
	})
}

// PutMessageRecord implements aacp.Store.
func (s *Store) PutMessageRecord(ctx context.Context, rec *aacp.MessageRecord) error {
	args, err := messageArgs(rec)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.stmt(tx, ctx, "upsertMessage").ExecContext(ctx, args...)
		return err
	})
}

// GetRequestRecord implements aacp.Store.
func (s *Store) GetRequestRecord(ctx context.Context, requestID string) (*aacp.RequestRecord, error) {
	r, err := scanRequest(s.stmts["getRequest"].QueryRowContext(ctx, requestID))
	if bad := (*badRequestRow)(nil); errors.As(err, &bad) {
		if err := s.failBadRequest(ctx, bad); err != nil {
			return nil, err
		}
		r, err = scanRequest(s.stmts["getRequest"].QueryRowContext(ctx, requestID))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: request %s", aacp.ErrNotFound, requestID)
	}
	return r, err
}

// GetMessageRecord implements aacp.Store.
func (s *Store) GetMessageRecord(ctx context.Context, messageID string) (*aacp.MessageRecord, error) {
	m, err := scanMessage(s.stmts["getMessage"].QueryRowContext(ctx, messageID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: message %s", aacp.ErrNotFound, messageID)
	}
	return m, err
}

// MarkCompleted implements aacp.Store.
func (s *Store) MarkCompleted(ctx context.Context, requestID string, outcome aacp.Outcome, completionRef string) error {
	if !outcome.Final() {
		return fmt.Errorf("sqlstore: MarkCompleted with outcome %q", outcome)
	}
	_, err := s.Resolve(ctx, &aacp.Resolution{RequestID: requestID, Outcome: outcome, CompletionRef: completionRef, CompletedAt: time.Now()}, nil, aacp.Fence{})
	return err
}

// MarkFailed implements aacp.Store.
func (s *Store) MarkFailed(ctx context.Context, requestID string, serr *mcp.StructuredError) error {
	_, err := s.Resolve(ctx, &aacp.Resolution{RequestID: requestID, Outcome: aacp.OutcomeFailed, Error: serr, CompletedAt: time.Now()}, nil, aacp.Fence{})
	return err
}

func (s *Store) getCounter(ctx context.Context, name, source, target string) (uint64, error) {
	var v int64
	err := s.stmts[name].QueryRowContext(ctx, source, target).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return uint64(v), err
}

// GetLastSequence implements aacp.Store.
func (s *Store) GetLastSequence(ctx context.Context, source, target string) (uint64, error) {
	return s.getCounter(ctx, "getLastSeq", source, target)
}

// GetAck implements aacp.Store.
func (s *Store) GetAck(ctx context.Context, source, target string) (uint64, error) {
	return s.getCounter(ctx, "getAck", source, target)
}

// UpdateLastSequence implements aacp.Store.
func (s *Store) UpdateLastSequence(ctx context.Context, source, target string, seq uint64) error {
	return s.writePair(ctx, source, target, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.stmt(tx, ctx, "raiseSeq").ExecContext(ctx, source, target, int64(seq))
		return err
	})
}

// GetUnacknowledgedMessages implements aacp.Store.
func (s *Store) GetUnacknowledgedMessages(ctx context.Context, source, target string) ([]*aacp.Envelope, error) {
	rows, err := s.stmts["unacked"].QueryContext(ctx, source, target)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*aacp.Envelope
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		env, err := aacp.DecodeEnvelope([]byte(text))
		if err != nil {
			continue // quarantined when claimed; it cannot be delivered anyway
		}
		out = append(out, env)
	}
	return out, rows.Err()
}

// ListPendingRequests implements aacp.Store.
func (s *Store) ListPendingRequests(ctx context.Context, olderThan time.Time) ([]*aacp.RequestRecord, error) {
	t := nanos(olderThan)
	rows, err := s.stmts["pending"].QueryContext(ctx, t, t)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out []*aacp.RequestRecord
		bad []*badRequestRow
	)
	for rows.Next() {
		r, err := scanRequest(rows)
		if b := (*badRequestRow)(nil); errors.As(err, &b) {
			bad = append(bad, b) // skipped: failed with its reason below
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	for _, b := range bad {
		if err := s.failBadRequest(ctx, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ListMessagesInState implements aacp.Store.
func (s *Store) ListMessagesInState(ctx context.Context, outcome aacp.Outcome, olderThan time.Time) ([]*aacp.MessageRecord, error) {
	t := nanos(olderThan)
	rows, err := s.stmts["inState"].QueryContext(ctx, string(outcome), t, t)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*aacp.MessageRecord
	for rows.Next() {
		m, raw, err := scanMessageRow(rows)
		if err != nil {
			return nil, err
		}
		if decodeStored(m, raw) != nil {
			continue // undecodable: see ListDeadLetters once it is claimed
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// PurgeExpired implements aacp.Store.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int, error) {
	n := int64(0)
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		n = 0
		for _, q := range []string{"purgeRequests", "purgeMessages"} {
			r, err := s.stmt(tx, ctx, q).ExecContext(ctx, now.UnixNano())
			if err != nil {
				return err
			}
			k, err := r.RowsAffected()
			if err != nil {
				return err
			}
			n += k
		}
		return nil
	})
	return int(n), err
}

// enqueue raises the pair's sequence to msg's seq (failing with
// aacp.ErrSeqConflict if it is not above it) and inserts msg (its row:
// args).
func (s *Store) enqueue(ctx context.Context, tx *sql.Tx, msg *aacp.MessageRecord, args []any) error {
	env := &msg.Envelope
	r, err := s.stmt(tx, ctx, "raiseSeq").ExecContext(ctx, env.SourceAgentID, env.TargetAgentID, int64(env.Seq))
	if err != nil {
		return err
	}
	if k, err := r.RowsAffected(); err != nil {
		return err
	} else if k == 0 {
		return fmt.Errorf("%w: %s→%s seq %d", aacp.ErrSeqConflict, env.SourceAgentID, env.TargetAgentID, env.Seq)
	}
	_, err = s.stmt(tx, ctx, "insertMessage").ExecContext(ctx, args...)
	return err
}

// Enqueue implements aacp.Store.
func (s *Store) Enqueue(ctx context.Context, req *aacp.RequestRecord, msg *aacp.MessageRecord, fence aacp.Fence) error {
	g := &grouped{fence: fence, msg: msg}
	if req != nil {
		var err error
		if g.req, err = requestArgs(req); err != nil {
			return err
		}
		g.reqID = req.RequestID
	}
	var err error
	if g.msgArgs, err = messageArgs(msg); err != nil {
		return err
	}
	reqArgs := g.req
	return s.writeMessage(ctx, g, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.checkFence(ctx, tx, fence); err != nil {
			return err
		}
		if req != nil {
			// The claim of the request id: a conditional insert.
			r, err := s.stmt(tx, ctx, "insertRequest").ExecContext(ctx, reqArgs...)
			if err != nil {
				return err
			}
			if k, err := r.RowsAffected(); err != nil {
				return err
			} else if k == 0 {
				return fmt.Errorf("%w: %s", aacp.ErrDuplicateRequest, req.RequestID)
			}
		}
		return s.enqueue(ctx, tx, msg, g.msgArgs)
	})
}

// Resolve implements aacp.Store.
func (s *Store) Resolve(ctx context.Context, res *aacp.Resolution, response *aacp.MessageRecord, fence aacp.Fence) (bool, error) {
	errText, err := encodeError(res.Error)
	if err != nil {
		return false, err
	}
	applied := false
	g := &grouped{fence: fence, resID: res.RequestID, applied: &applied, msg: response,
		res: []any{res.RequestID, string(res.Outcome), string(res.Completion), nullText(jsontext.Value(res.Result)), errText,
			res.CompletionRef, nanos(res.CompletedAt), res.Attempts}}
	if response != nil {
		if g.msgArgs, err = messageArgs(response); err != nil {
			return false, err
		}
	}
	err = s.writeMessage(ctx, g, func(ctx context.Context, tx *sql.Tx) error {
		applied = false
		if err := s.checkFence(ctx, tx, fence); err != nil {
			return err
		}
		ok, err := s.updateUnlessFinal(ctx, tx, res.RequestID, "resolve", string(res.Outcome), string(res.Completion), nullText(jsontext.Value(res.Result)),
			errText, res.CompletionRef, nanos(res.CompletedAt), res.Attempts, res.Attempts, res.RequestID)
		if err != nil || !ok {
			return err // final already: nothing to do
		}
		if response != nil {
			if err := s.enqueue(ctx, tx, response, g.msgArgs); err != nil {
				return err
			}
		}
		applied = true
		return nil
	})
	return applied, err
}

// updateUnlessFinal runs the conditional update stmt (it changes a request
// that is not final yet) and reports whether it changed the request; a
// request that does not exist is aacp.ErrNotFound.
func (s *Store) updateUnlessFinal(ctx context.Context, tx *sql.Tx, requestID, stmt string, args ...any) (bool, error) {
	r, err := s.stmt(tx, ctx, stmt).ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	k, err := r.RowsAffected()
	if err != nil || k > 0 {
		return k > 0, err
	}
	var one int
	err = s.stmt(tx, ctx, "requestExists").QueryRowContext(ctx, requestID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("%w: request %s", aacp.ErrNotFound, requestID)
	}
	return false, err // final: left as it is
}

// Acknowledge implements aacp.Store. The pairs are processed in a fixed
// order so that concurrent acknowledgments cannot deadlock; on PostgreSQL
// the pairs of each writer are committed in a transaction of their own.
func (s *Store) Acknowledge(ctx context.Context, acks []aacp.Ack) error {
	if len(acks) == 0 {
		return nil
	}
	acks = slices.Clone(acks)
	slices.SortFunc(acks, func(a, b aacp.Ack) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return strings.Compare(a.Target, b.Target)
	})
	// Each writer's group of acknowledgments runs in its own transaction
	// (and again from scratch if it is retried): the stale ones it finds
	// are reported after all committed.
	return s.writeAcks(ctx, acks, func(ctx context.Context, tx *sql.Tx, group []aacp.Ack, lost *[]error) error {
		*lost = nil
		live := make([]aacp.Ack, 0, len(group))
		for _, a := range group {
			if err := s.checkFence(ctx, tx, a.Fence); errors.Is(err, aacp.ErrLeaseLost) {
				*lost = append(*lost, err)
				continue
			} else if err != nil {
				return err
			}
			live = append(live, a)
		}
		if len(live) == 0 {
			return nil
		}
		return s.execAcks(ctx, tx, live)
	})
}

// claimWhere returns the condition of the due messages of targets, and its
// arguments.
func claimWhere(q *aacp.ClaimQuery, targets []string) (string, []any) {
	var where strings.Builder
	where.WriteString(` FROM aacp_messages WHERE status = 'UNKNOWN' AND target_agent_id IN (`)
	args := make([]any, 0, len(targets)+2)
	for i, t := range targets {
		if i > 0 {
			where.WriteString(", ")
		}
		where.WriteString("?")
		args = append(args, t)
	}
	where.WriteString(")")
	if !q.IgnoreSchedule {
		where.WriteString(" AND next_retry_at <= ?")
		args = append(args, q.Now.UnixNano())
	}
	return where.String(), args
}

// ClaimDue implements aacp.Store. The fences of q are checked in the claim's
// transaction (FOR SHARE on PostgreSQL), so a takeover is ordered before or
// after the claim as a whole. A row whose envelope cannot be decoded is
// quarantined in the same transaction.
func (s *Store) ClaimDue(ctx context.Context, q aacp.ClaimQuery) ([]*aacp.MessageRecord, error) {
	if len(q.Targets) == 0 {
		return nil, nil
	}
	// Most polls find nothing: look first without a transaction, so that
	// idle pollers never take SQLite's write lock (or PostgreSQL row locks).
	where, args := claimWhere(&q, q.Targets)
	var one int
	err := s.rdb.QueryRowContext(ctx, s.d.rebind(`SELECT 1`+where+` LIMIT 1`), args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*aacp.MessageRecord
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out = out[:0]
		targets := make([]string, 0, len(q.Targets))
		for _, t := range q.Targets {
			if f, ok := q.FenceOf(t); ok {
				if err := s.checkFence(ctx, tx, f); errors.Is(err, aacp.ErrLeaseLost) {
					continue // the lease moved on: nothing to claim for t
				} else if err != nil {
					return err
				}
			}
			targets = append(targets, t)
		}
		if len(targets) == 0 {
			return nil
		}
		where, args := claimWhere(&q, targets)
		query := `SELECT ` + msgScan + where + ` ORDER BY next_retry_at, seq LIMIT ?`
		args = append(args, q.ClaimLimit())
		if s.d == dialectPostgres {
			query += " FOR UPDATE SKIP LOCKED"
		}
		rows, err := tx.QueryContext(ctx, s.d.rebind(query), args...)
		if err != nil {
			return err
		}
		var bad []*aacp.MessageRecord
		for rows.Next() {
			m, raw, err := scanMessageRow(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if err := decodeStored(m, raw); err != nil {
				m.DeadReason = err.Error()
				bad = append(bad, m)
				continue
			}
			out = append(out, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		upd := s.stmt(tx, ctx, "claimUpdate")
		for _, m := range out {
			m.RetryCount++
			m.ClaimedBy = q.Owner
			m.NextRetryAt = q.NextRetry(m.RetryCount).UTC()
			if _, err := upd.ExecContext(ctx, m.RetryCount, m.ClaimedBy, m.NextRetryAt.UnixNano(), m.MessageID); err != nil {
				return err
			}
		}
		for _, m := range bad {
			if _, err := s.quarantine(ctx, tx, m.MessageID, m.DeadReason); err != nil {
				return err
			}
			m.Status = aacp.OutcomeFailed
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
