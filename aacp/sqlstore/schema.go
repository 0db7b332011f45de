package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// migration is one versioned step of the schema. Steps run in version
// order, each at most once per database, recorded in
// aacp_schema_migrations.
type migration struct {
	version int
	name    string
	stmts   []string
	// sqliteOnly: the step changes nothing on PostgreSQL, where it is
	// only recorded.
	sqliteOnly bool
}

// migrations is the schema, oldest step first. Never edit a released step:
// append a new one.
var migrations = []migration{
	{version: 1, name: "ledger tables", stmts: []string{
		`CREATE TABLE aacp_requests (
			request_id      TEXT PRIMARY KEY,
			source_agent_id TEXT NOT NULL,
			target_agent_id TEXT NOT NULL,
			message_type    TEXT NOT NULL,
			payload         TEXT NOT NULL,
			status          TEXT NOT NULL,
			completion      TEXT NOT NULL DEFAULT '',
			result          TEXT,
			error           TEXT,
			completion_ref  TEXT NOT NULL DEFAULT '',
			attempts        INTEGER NOT NULL DEFAULT 0,
			deadline        BIGINT NOT NULL DEFAULT 0,
			created_at      BIGINT NOT NULL,
			completed_at    BIGINT NOT NULL DEFAULT 0,
			expires_at      BIGINT NOT NULL DEFAULT 0
		)` + withoutRowID,
		`CREATE INDEX aacp_requests_pending ON aacp_requests (created_at) WHERE status = 'UNKNOWN'`,
		`CREATE INDEX aacp_requests_expires ON aacp_requests (expires_at)`,
		`CREATE TABLE aacp_messages (
			message_id      TEXT PRIMARY KEY,
			request_id      TEXT NOT NULL DEFAULT '',
			source_agent_id TEXT NOT NULL,
			target_agent_id TEXT NOT NULL,
			seq             BIGINT NOT NULL,
			message_type    TEXT NOT NULL,
			envelope        TEXT NOT NULL,
			status          TEXT NOT NULL,
			created_at      BIGINT NOT NULL,
			expires_at      BIGINT NOT NULL DEFAULT 0,
			retry_count     INTEGER NOT NULL DEFAULT 0,
			next_retry_at   BIGINT NOT NULL DEFAULT 0,
			claimed_by      TEXT NOT NULL DEFAULT ''
		)` + withoutRowID,
		`CREATE INDEX aacp_messages_due ON aacp_messages (target_agent_id, next_retry_at) WHERE status = 'UNKNOWN'`,
		`CREATE INDEX aacp_messages_pending ON aacp_messages (source_agent_id, target_agent_id, seq) WHERE status = 'UNKNOWN'`,
		`CREATE INDEX aacp_messages_expires ON aacp_messages (expires_at)`,
		`CREATE TABLE aacp_sequences (
			source_agent_id TEXT NOT NULL,
			target_agent_id TEXT NOT NULL,
			last_seq        BIGINT NOT NULL DEFAULT 0,
			ack             BIGINT NOT NULL DEFAULT 0,
			PRIMARY KEY (source_agent_id, target_agent_id)
		)` + withoutRowID,
	}},
	// Additive: a new table, nothing existing changes. Databases of
	// version 1 gain it on their next open.
	{version: 2, name: "agent leases", stmts: []string{
		`CREATE TABLE aacp_leases (
			agent_id   TEXT PRIMARY KEY,
			owner      TEXT NOT NULL DEFAULT '',
			token      BIGINT NOT NULL DEFAULT 0,
			expires_at BIGINT NOT NULL DEFAULT 0
		)` + withoutRowID,
	}},
	// Additive: a column with a default, and an index. Dead letters are
	// messages quarantined with a reason (status FAILED).
	{version: 3, name: "dead letters", stmts: []string{
		`ALTER TABLE aacp_messages ADD COLUMN dead_reason TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX aacp_messages_dead ON aacp_messages (created_at) WHERE dead_reason <> ''`,
	}},
	// SQLite: the messages and requests become rowid tables, their ids
	// unique keys. Clustered on their ids (WITHOUT ROWID), each table was
	// a tree of whole records, the envelope or payload inline, in its
	// interior pages as well as its leaves, so it held few rows per page
	// and split often; every entry of their other indexes repeated the
	// 36-byte id; a resolution or an acknowledgment rewrote a whole record
	// in that tree. A rowid table keeps its rows in the leaves under
	// integer keys, and the other indexes carry an 8-byte rowid. Rebuilt
	// in place (rows kept, then the indexes again). PostgreSQL's tables
	// are heaps already.
	{version: 4, name: "rowid messages and requests", sqliteOnly: true, stmts: []string{
		`CREATE TABLE aacp_requests_v4 (
			request_id      TEXT NOT NULL UNIQUE,
			source_agent_id TEXT NOT NULL,
			target_agent_id TEXT NOT NULL,
			message_type    TEXT NOT NULL,
			payload         TEXT NOT NULL,
			status          TEXT NOT NULL,
			completion      TEXT NOT NULL DEFAULT '',
			result          TEXT,
			error           TEXT,
			completion_ref  TEXT NOT NULL DEFAULT '',
			attempts        INTEGER NOT NULL DEFAULT 0,
			deadline        BIGINT NOT NULL DEFAULT 0,
			created_at      BIGINT NOT NULL,
			completed_at    BIGINT NOT NULL DEFAULT 0,
			expires_at      BIGINT NOT NULL DEFAULT 0
		)`,
		`INSERT INTO aacp_requests_v4 (` + reqCols + `) SELECT ` + reqCols + ` FROM aacp_requests`,
		`DROP TABLE aacp_requests`,
		`ALTER TABLE aacp_requests_v4 RENAME TO aacp_requests`,
		`CREATE INDEX aacp_requests_pending ON aacp_requests (created_at) WHERE status = 'UNKNOWN'`,
		`CREATE INDEX aacp_requests_expires ON aacp_requests (expires_at)`,
		`CREATE TABLE aacp_messages_v4 (
			message_id      TEXT NOT NULL UNIQUE,
			request_id      TEXT NOT NULL DEFAULT '',
			source_agent_id TEXT NOT NULL,
			target_agent_id TEXT NOT NULL,
			seq             BIGINT NOT NULL,
			message_type    TEXT NOT NULL,
			envelope        TEXT NOT NULL,
			status          TEXT NOT NULL,
			created_at      BIGINT NOT NULL,
			expires_at      BIGINT NOT NULL DEFAULT 0,
			retry_count     INTEGER NOT NULL DEFAULT 0,
			next_retry_at   BIGINT NOT NULL DEFAULT 0,
			claimed_by      TEXT NOT NULL DEFAULT '',
			dead_reason     TEXT NOT NULL DEFAULT ''
		)`,
		`INSERT INTO aacp_messages_v4 (` + msgCols + `, dead_reason) SELECT ` + msgCols + `, dead_reason FROM aacp_messages`,
		`DROP TABLE aacp_messages`,
		`ALTER TABLE aacp_messages_v4 RENAME TO aacp_messages`,
		`CREATE INDEX aacp_messages_due ON aacp_messages (target_agent_id, next_retry_at) WHERE status = 'UNKNOWN'`,
		`CREATE INDEX aacp_messages_pending ON aacp_messages (source_agent_id, target_agent_id, seq) WHERE status = 'UNKNOWN'`,
		`CREATE INDEX aacp_messages_expires ON aacp_messages (expires_at)`,
		`CREATE INDEX aacp_messages_dead ON aacp_messages (created_at) WHERE dead_reason <> ''`,
	}},
}

// withoutRowID marks a table clustered on its primary key (SQLite); it is
// removed for PostgreSQL, whose tables are always heaps.
const withoutRowID = " WITHOUT ROWID"

// SchemaVersion is the schema version this build migrates databases to.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrationLockKey is the PostgreSQL advisory lock that serializes
// concurrent migrations ("aacp" in ASCII).
const migrationLockKey = 0x61616370

// migrate brings the schema up to date in one transaction: it creates the
// migrations table, reads the versions applied, and applies the missing
// steps in order. Concurrent migrators (several processes starting at once)
// are serialized: by an advisory lock on PostgreSQL, by the write lock of
// an immediate transaction on SQLite. Running it again does nothing. A
// database migrated by a newer build (an unknown version) is refused.
func migrate(ctx context.Context, db *sql.DB, d dialect) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if d == dialectPostgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
			return fmt.Errorf("sqlstore: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS aacp_schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at BIGINT NOT NULL
	)`); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM aacp_schema_migrations`)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	for v := range applied {
		if v > SchemaVersion() {
			return fmt.Errorf("sqlstore: the database has schema version %d, newer than this build supports (%d)", v, SchemaVersion())
		}
	}
	insert := d.rebind(`INSERT INTO aacp_schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`)
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.stmts {
			if m.sqliteOnly && d == dialectPostgres {
				break
			}
			if d == dialectPostgres {
				stmt = strings.ReplaceAll(stmt, withoutRowID, "")
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqlstore: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, insert, m.version, m.name, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("sqlstore: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	return nil
}

// AppliedMigrations returns the versions recorded in the migrations table,
// in order.
func (s *Store) AppliedMigrations(ctx context.Context) ([]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT version FROM aacp_schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// dialect is the SQL flavour of the database.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

func (d dialect) String() string {
	if d == dialectPostgres {
		return "postgres"
	}
	return "sqlite"
}

// rebind turns the ? placeholders of q into $1, $2, ... for PostgreSQL.
func (d dialect) rebind(q string) string {
	if d != dialectPostgres {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
