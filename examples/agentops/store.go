package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver "pgx" (-dsn)
	_ "modernc.org/sqlite"             // SQLite driver "sqlite" (-db, the default)
)

// Dialects the store speaks. The SQL is shared: $N placeholders (both
// drivers accept them), TEXT and BIGINT columns only (times are Unix
// nanoseconds), INSERT ... ON CONFLICT for upserts. The one difference is
// the substring function of memory_search.
const (
	dialectSQLite   = "sqlite"
	dialectPostgres = "postgres"
)

// schema is created at startup, one statement at a time.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS agentops_memory (
		namespace TEXT NOT NULL,
		mkey TEXT NOT NULL,
		mvalue TEXT NOT NULL,
		size BIGINT NOT NULL,
		stored_at BIGINT NOT NULL,
		PRIMARY KEY (namespace, mkey))`,
	`CREATE INDEX IF NOT EXISTS agentops_memory_recency ON agentops_memory (stored_at)`,
	`CREATE TABLE IF NOT EXISTS agentops_sessions (
		id TEXT PRIMARY KEY,
		initiator TEXT NOT NULL,
		task TEXT NOT NULL,
		workspace TEXT NOT NULL,
		metadata TEXT NOT NULL,
		status TEXT NOT NULL,
		summary TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		updated_at BIGINT NOT NULL,
		completed_at BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS agentops_participants (
		session_id TEXT NOT NULL,
		agent_id TEXT NOT NULL,
		role TEXT NOT NULL,
		joined_at BIGINT NOT NULL,
		task_count BIGINT NOT NULL,
		PRIMARY KEY (session_id, agent_id))`,
	`CREATE TABLE IF NOT EXISTS agentops_session_policies (
		session_id TEXT NOT NULL,
		policy_id TEXT NOT NULL,
		applied_at BIGINT NOT NULL,
		PRIMARY KEY (session_id, policy_id))`,
	`CREATE TABLE IF NOT EXISTS agentops_traces (
		id TEXT PRIMARY KEY,
		tool TEXT NOT NULL,
		workflow_id TEXT NOT NULL,
		agent_id TEXT NOT NULL,
		correlation_id TEXT NOT NULL,
		status TEXT NOT NULL,
		outcome TEXT NOT NULL,
		error_code TEXT NOT NULL,
		start_at BIGINT NOT NULL,
		end_at BIGINT NOT NULL,
		duration_ns BIGINT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS agentops_traces_recency ON agentops_traces (start_at)`,
	`CREATE TABLE IF NOT EXISTS agentops_trace_events (
		trace_id TEXT NOT NULL,
		seq BIGINT NOT NULL,
		type TEXT NOT NULL,
		name TEXT NOT NULL,
		ts BIGINT NOT NULL,
		status TEXT NOT NULL,
		duration_ns BIGINT NOT NULL,
		payload TEXT NOT NULL,
		PRIMARY KEY (trace_id, seq))`,
}

// store is the server's data: memory entries, sessions, traces. It is safe
// for concurrent use.
type store struct {
	db      *sql.DB
	dialect string

	mu   sync.Mutex
	last int64 // last timestamp handed out by now
}

// openStore opens the database: PostgreSQL when dsn is set, else the SQLite
// file path (created if missing), and creates the schema.
func openStore(ctx context.Context, path, dsn string) (*store, error) {
	var (
		db      *sql.DB
		err     error
		dialect string
	)
	if dsn != "" {
		dialect = dialectPostgres
		db, err = sql.Open("pgx", dsn)
	} else {
		if path == "" {
			return nil, errors.New("no database: give -db or -dsn")
		}
		dialect = dialectSQLite
		db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
		if err == nil {
			// One connection: SQLite has one writer anyway, and this keeps
			// SQLITE_BUSY away from concurrent tool calls.
			db.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, err
	}
	s := &store{db: db, dialect: dialect}
	for _, q := range schema {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, fmt.Errorf("creating schema: %w", err)
		}
	}
	return s, nil
}

// Close closes the database.
func (s *store) Close() error { return s.db.Close() }

// now returns the current time in Unix nanoseconds, strictly increasing
// within the process, so that ordering by recency has no ties.
func (s *store) now() int64 {
	n := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= s.last {
		n = s.last + 1
	}
	s.last = n
	return n
}

// contains is the SQL expression "haystack contains needle", case-sensitive.
func (s *store) contains(haystack, needle string) string {
	if s.dialect == dialectPostgres {
		return "strpos(" + haystack + ", " + needle + ") > 0"
	}
	return "instr(" + haystack + ", " + needle + ") > 0"
}

// ts formats a Unix-nanosecond time as RFC 3339 in UTC ("" for 0).
func ts(n int64) string {
	if n == 0 {
		return ""
	}
	return time.Unix(0, n).UTC().Format(time.RFC3339Nano)
}

// ms converts nanoseconds to milliseconds, keeping fractions.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

// clampLimit applies a default and a maximum to a limit argument.
func clampLimit(limit, def, maximum int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, maximum)
}

// sqlArgs collects the arguments of a query; add returns the placeholder
// of the value it appends ($1, $2, ...).
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}
