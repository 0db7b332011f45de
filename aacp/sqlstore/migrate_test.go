package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/internal/pgtest"
)

func TestRebind(t *testing.T) {
	assert.Equal(t, "a = ? AND b = ?", dialectSQLite.rebind("a = ? AND b = ?"))
	assert.Equal(t, "a = $1 AND b = $2", dialectPostgres.rebind("a = ? AND b = ?"))
}

// Migrations are idempotent, recorded, safe to run from several openers at
// once, and a database of a newer build is refused.
func TestSQLiteMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := OpenSQLite(path)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	s, err := OpenSQLite(path)
	require.NoError(t, err)
	v, err := s.AppliedMigrations(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4}, v)
	assert.Equal(t, 4, SchemaVersion())
	assert.Equal(t, "sqlite", s.Dialect())

	_, err = s.DB().Exec(`INSERT INTO aacp_schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = OpenSQLite(path)
	assert.ErrorContains(t, err, "newer than this build supports")
}

func TestOpenSQLiteOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenSQLite(path, WithSynchronous("normal"), WithBusyTimeout(0))
	require.NoError(t, err)
	var mode string
	require.NoError(t, s.DB().QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "wal", mode)
	var sync int
	require.NoError(t, s.DB().QueryRow(`PRAGMA synchronous`).Scan(&sync))
	assert.Equal(t, 1, sync, "NORMAL")
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice")

	_, err = OpenSQLite(path, WithSynchronous("OFF"))
	assert.ErrorContains(t, err, "synchronous")
	_, err = OpenSQLite(filepath.Join(t.TempDir(), "missing-dir", "x", "ledger.db"))
	assert.Error(t, err)
}

// A database of schema version 1 (before leases), holding a pending
// request, is upgraded in place on its next open: the lease table is added,
// nothing else changes, and the request can be resolved under a lease.
func testUpgradeFromV1(t *testing.T, driver, dsn string, d dialect, open func() (*Store, error)) {
	ctx := context.Background()
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	saved := migrations
	migrations = migrations[:1]
	err = migrate(ctx, db, d)
	migrations = saved
	require.NoError(t, err)
	const id = "6f1c3c3e-8a4b-4c2d-9e1f-0a1b2c3d4e5f"
	_, err = db.Exec(d.rebind(`INSERT INTO aacp_requests (request_id, source_agent_id, target_agent_id, message_type,
		payload, status, created_at) VALUES (?, 'a', 'b', 'REQUEST', '1', 'UNKNOWN', 1)`), id)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := open()
	require.NoError(t, err)
	defer s.Close()
	v, err := s.AppliedMigrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4}, v)
	got, err := s.GetRequestRecord(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeUnknown, got.Status, "existing rows are kept")
	now := time.Now()
	l, err := s.AcquireLease(ctx, "b", "n1", now, time.Minute)
	require.NoError(t, err)
	applied, err := s.Resolve(ctx, &aacp.Resolution{RequestID: id, Outcome: aacp.OutcomeCompleted, Result: json.RawMessage(`2`),
		CompletedAt: now}, nil, l.Fence())
	require.NoError(t, err)
	assert.True(t, applied)
}

func TestSQLiteUpgradeFromV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	testUpgradeFromV1(t, "sqlite", "file:"+path, dialectSQLite, func() (*Store, error) { return OpenSQLite(path) })
}

func TestPostgresUpgradeFromV1(t *testing.T) {
	dsn := pgtest.Schema(t)
	testUpgradeFromV1(t, "pgx", dsn, dialectPostgres, func() (*Store, error) { return OpenPostgres(dsn) })
}

// A SQLite database of schema version 3 (messages and requests clustered on
// their ids) is rebuilt in place as rowid tables on its next open: every
// row and every index is kept, a dead letter stays one, and an id stays
// unique.
func TestSQLiteUpgradeFromV3(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	saved := migrations
	migrations = migrations[:3]
	err = migrate(ctx, db, dialectSQLite)
	migrations = saved
	require.NoError(t, err)
	const (
		reqID = "6f1c3c3e-8a4b-4c2d-9e1f-0a1b2c3d4e5f"
		msgID = "0d2a9e64-8b4f-4c1e-8d8e-5b9f2f7e1a20"
		dead  = "3b7e1c2a-4d5f-4a6b-8c9d-0e1f2a3b4c5d"
	)
	_, err = db.Exec(`INSERT INTO aacp_requests (request_id, source_agent_id, target_agent_id, message_type,
		payload, status, created_at) VALUES (?, 'a', 'b', 'REQUEST', '1', 'UNKNOWN', 1)`, reqID)
	require.NoError(t, err)
	env := `{"messageId":"%s","requestId":"` + reqID + `","sourceAgentId":"a","targetAgentId":"b","seq":%d,` +
		`"messageType":"REQUEST","timestamp":"2026-01-01T00:00:00Z","payload":1}`
	for i, id := range []string{msgID, dead} {
		_, err = db.Exec(`INSERT INTO aacp_messages (message_id, request_id, source_agent_id, target_agent_id, seq,
			message_type, envelope, status, created_at) VALUES (?, ?, 'a', 'b', ?, 'REQUEST', ?, 'UNKNOWN', 1)`,
			id, reqID, i+1, fmt.Sprintf(env, id, i+1))
		require.NoError(t, err)
	}
	_, err = db.Exec(`UPDATE aacp_messages SET status = 'FAILED', dead_reason = 'poison' WHERE message_id = ?`, dead)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := OpenSQLite(path)
	require.NoError(t, err)
	defer s.Close()
	v, err := s.AppliedMigrations(ctx)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4}, v)
	r, err := s.GetRequestRecord(ctx, reqID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeUnknown, r.Status)
	m, err := s.GetMessageRecord(ctx, msgID)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), m.Envelope.Seq)
	dl, err := s.ListDeadLetters(ctx, 10)
	require.NoError(t, err)
	require.Len(t, dl, 1)
	assert.Equal(t, "poison", dl[0].Reason)

	var indexes []string
	rows, err := s.DB().Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		indexes = append(indexes, n)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"aacp_messages_dead", "aacp_messages_due", "aacp_messages_expires", "aacp_messages_pending",
		"aacp_requests_expires", "aacp_requests_pending"}, indexes)
	var rowid int64
	require.NoError(t, s.DB().QueryRow(`SELECT rowid FROM aacp_messages WHERE message_id = ?`, msgID).Scan(&rowid), "a rowid table")
	_, err = s.DB().Exec(`INSERT INTO aacp_requests (request_id, source_agent_id, target_agent_id, message_type,
		payload, status, created_at) VALUES (?, 'a', 'b', 'REQUEST', '1', 'UNKNOWN', 1)`, reqID)
	assert.ErrorContains(t, err, "UNIQUE", "request ids stay unique")
}
