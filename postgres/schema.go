package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// migration is one versioned step of the schema. Steps run in version
// order, each once per database, recorded in keel_schema_migrations.
// Never edit a released step: append a new one.
type migration struct {
	version int
	name    string
	stmts   []string
}

var migrations = []migration{
	{1, "tasks, fan-out payloads, SSE events, used states", []string{
		`CREATE SEQUENCE keel_task_seq`,
		`CREATE TABLE keel_tasks (
			id           TEXT PRIMARY KEY,
			owner        TEXT NOT NULL,
			quota        TEXT NOT NULL,
			revision     TEXT NOT NULL,
			seq          BIGINT NOT NULL,
			version      BIGINT NOT NULL,
			terminal     BOOLEAN NOT NULL,
			finished_seq BIGINT,
			size         BIGINT NOT NULL DEFAULT 0,
			expires_at   BIGINT NOT NULL DEFAULT 0,
			body         BYTEA NOT NULL,
			lease_owner  TEXT NOT NULL DEFAULT '',
			lease_until  BIGINT NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX keel_tasks_owner ON keel_tasks (owner, seq)`,
		`CREATE INDEX keel_tasks_active ON keel_tasks (quota) WHERE NOT terminal`,
		`CREATE INDEX keel_tasks_finished ON keel_tasks (quota, finished_seq) WHERE terminal`,
		`CREATE INDEX keel_tasks_expires ON keel_tasks (expires_at) WHERE expires_at <> 0`,
		`CREATE INDEX keel_tasks_lease ON keel_tasks (lease_until) WHERE NOT terminal`,
		`CREATE TABLE keel_fanout_payloads (
			id         BIGSERIAL PRIMARY KEY,
			payload    BYTEA NOT NULL,
			created_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`,
		`CREATE TABLE keel_sse_events (
			id         BIGSERIAL PRIMARY KEY,
			session_id TEXT NOT NULL,
			stream_id  TEXT NOT NULL,
			seq        BIGINT NOT NULL,
			data       BYTEA NOT NULL,
			UNIQUE (session_id, stream_id, seq)
		)`,
		`CREATE INDEX keel_sse_events_session ON keel_sse_events (session_id, id)`,
		`CREATE TABLE keel_sse_sessions (
			session_id TEXT PRIMARY KEY,
			bytes      BIGINT NOT NULL,
			touched_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`,
		`CREATE TABLE keel_used_states (
			digest     BYTEA PRIMARY KEY,
			expires_at BIGINT NOT NULL
		)`,
		`CREATE INDEX keel_used_states_expires ON keel_used_states (expires_at)`,
		`CREATE TABLE keel_used_states_count (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), n BIGINT NOT NULL)`,
		`INSERT INTO keel_used_states_count (n) VALUES (0)`,
	}},
}

// SchemaVersion is the newest schema step this build knows.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrationLockKey is the advisory lock replicas starting together take to
// migrate once.
const migrationLockKey = 0x6b65656c7067 // "keelpg"

// migrate creates the tables when missing and applies the steps the
// database has not seen, in one transaction under an advisory lock.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
		return fmt.Errorf("postgres: migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS keel_schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL
	)`); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT version FROM keel_schema_migrations`)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	for v := range applied {
		if v > SchemaVersion() {
			return fmt.Errorf("postgres: the database has schema version %d, newer than this build supports (%d)", v, SchemaVersion())
		}
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("postgres: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO keel_schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.version, m.name, time.Now()); err != nil {
			return fmt.Errorf("postgres: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}
