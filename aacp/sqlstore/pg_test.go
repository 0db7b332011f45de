package sqlstore_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// DSNEnv names the variable that enables the PostgreSQL tests.
const DSNEnv = "KEEL_TEST_POSTGRES_DSN"

// postgresDSN returns the DSN of the test database or skips the test.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		t.Skipf("PostgreSQL tests skipped: set %s to a PostgreSQL DSN (for example eval \"$(.ci/postgres.sh)\")", DSNEnv)
	}
	return dsn
}

// freshSchema creates a schema of its own for one test (dropped at the end)
// and returns dsn with its search_path set to it.
func freshSchema(t testing.TB, dsn string) string {
	t.Helper()
	schema := fmt.Sprintf("aacp_test_%x", rand.Uint64())
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE SCHEMA " + schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		db, err := sql.Open("pgx", dsn)
		if err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE") //nolint:errcheck // best effort
			db.Close()
		}
	})
	return withSearchPath(dsn, schema)
}

func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}
