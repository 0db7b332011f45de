package sqlstore

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
)

// withDSNParam adds a connection parameter to a URL or key=value DSN.
func withDSNParam(t *testing.T, dsn, key, value string) string {
	t.Helper()
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads + as itself
		return u.String()
	}
	return dsn + " " + key + "='" + strings.ReplaceAll(value, "'", `\'`) + "'"
}

// show returns the planner settings as q (a session or a transaction)
// sees them.
func show(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, name := range postgresPlanner {
		var v string
		require.NoError(t, q.QueryRowContext(context.Background(), "SHOW "+name).Scan(&v))
		got[name] = v
	}
	return got
}

// The store's PostgreSQL transactions set the planner settings with SET
// LOCAL, except those the DSN sets (as a parameter or in options) or
// WithPlannerSettings(false); sessions outside a transaction, and a
// connection after its transaction ends (committed, rolled back, failed),
// keep the server's settings: nothing is sent as a startup parameter or
// set for the session.
func TestPostgresPlannerSettings(t *testing.T) {
	allOff := map[string]string{"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_hashjoin": "off", "enable_mergejoin": "off"}
	allOn := map[string]string{"enable_seqscan": "on", "enable_bitmapscan": "on", "enable_hashjoin": "on", "enable_mergejoin": "on"}
	but := func(m map[string]string, name, v string) map[string]string {
		c := map[string]string{}
		for k, x := range m {
			c[k] = x
		}
		c[name] = v
		return c
	}
	for _, tc := range []struct {
		name       string
		key, value string // a DSN parameter, if key != ""
		opts       []Option
		inTx       map[string]string
	}{
		{name: "default", inTx: allOff},
		{name: "DSN parameter", key: "enable_seqscan", value: "on", inTx: but(allOff, "enable_seqscan", "on")},
		{name: "DSN options -c", key: "options", value: "-c enable_seqscan=on", inTx: but(allOff, "enable_seqscan", "on")},
		{name: "DSN options --name", key: "options", value: "--enable-hashjoin=on", inTx: but(allOff, "enable_hashjoin", "on")},
		{name: "DSN sets off", key: "options", value: "-c enable_mergejoin=off", inTx: allOff},
		{name: "opt-out", opts: []Option{WithPlannerSettings(false)}, inTx: allOn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.Schema(t)
			outside := allOn
			if tc.key != "" {
				dsn = withDSNParam(t, dsn, tc.key, tc.value)
				// What the DSN sets holds for the whole session.
				for name, v := range tc.inTx {
					if v != allOff[name] || tc.name == "DSN sets off" && name == "enable_mergejoin" {
						outside = but(outside, name, v)
					}
				}
			}
			s, err := OpenPostgres(dsn, tc.opts...)
			require.NoError(t, err)
			defer s.Close()
			ctx := context.Background()

			// The pool's sessions outside a transaction: the server's
			// settings, from its built-in default unless the DSN set them.
			assert.Equal(t, outside, show(t, s.db), "outside a transaction")
			if tc.key == "" {
				var n int
				require.NoError(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM pg_settings
					WHERE name IN ('enable_seqscan', 'enable_bitmapscan', 'enable_hashjoin', 'enable_mergejoin')
					AND source <> 'default'`).Scan(&n))
				assert.Zero(t, n, "no planner setting comes from the client")
			}

			// One connection, through transactions that end every way.
			conn, err := s.db.Conn(ctx)
			require.NoError(t, err)
			defer conn.Close()
			for _, end := range []string{"commit", "rollback", "failed"} {
				tx, err := conn.BeginTx(ctx, nil)
				require.NoError(t, err)
				assert.Equal(t, tc.inTx, show(t, tx), "inside a transaction, before its %s", end)
				switch end {
				case "commit":
					require.NoError(t, tx.Commit())
				case "rollback":
					require.NoError(t, tx.Rollback())
				case "failed":
					_, err := tx.ExecContext(ctx, "SELECT 1/0")
					require.Error(t, err)
					require.ErrorIs(t, tx.Commit(), pgx.ErrTxCommitRollback)
				}
				assert.Equal(t, outside, show(t, conn), "after a %s", end)
			}

			// A transaction with options begins as pgx begins it, and sets
			// the same settings.
			tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true})
			require.NoError(t, err)
			assert.Equal(t, tc.inTx, show(t, tx), "inside a serializable read-only transaction")
			var iso string
			require.NoError(t, tx.QueryRowContext(ctx, "SHOW transaction_isolation").Scan(&iso))
			assert.Equal(t, "serializable", iso)
			_, err = tx.ExecContext(ctx, "CREATE TEMP TABLE t (x int)")
			assert.Error(t, err, "read-only")
			require.NoError(t, tx.Rollback())
			assert.Equal(t, outside, show(t, conn), "after it")
		})
	}
}

// On PostgreSQL the reads run outside a transaction are prepared
// statements of their own: on one connection, the same read run outside
// and inside a transaction has two server-side statements, each with its
// own executions (and so its own cached plan).
func TestPostgresReadsOutsideTxPlannedApart(t *testing.T) {
	s, err := OpenPostgres(pgtest.Schema(t))
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	for name, q := range queries {
		if strings.HasPrefix(q, "SELECT") {
			assert.True(t, s.stmts[name] != s.txStmts[name], "%s: one statement in and outside transactions", name)
		}
	}
	s.db.SetMaxOpenConns(1) // one connection, so one server session
	const runs = 7          // past the 5 custom plans before a generic one
	for range runs {
		var ack int64
		err := s.stmts["getAck"].QueryRowContext(ctx, "a", "b").Scan(&ack)
		require.ErrorIs(t, err, sql.ErrNoRows)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck // read-only
	for range runs {
		var ack int64
		err := tx.StmtContext(ctx, s.txStmts["getAck"]).QueryRowContext(ctx, "a", "b").Scan(&ack)
		require.ErrorIs(t, err, sql.ErrNoRows)
	}
	rows, err := tx.QueryContext(ctx, `SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements
		WHERE statement LIKE 'SELECT ack FROM aacp_sequences%'`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[bool]int64{}
	for rows.Next() {
		var text string
		var n int64
		require.NoError(t, rows.Scan(&text, &n))
		got[strings.HasSuffix(text, outsideTxTag)] += n
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[bool]int64{true: runs, false: runs}, got)
}
