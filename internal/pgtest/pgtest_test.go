package pgtest_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
)

func TestWithSearchPath(t *testing.T) {
	tests := []struct{ dsn, want string }{
		{"postgres://u:p@127.0.0.1:5432/db", "postgres://u:p@127.0.0.1:5432/db?search_path=s1"},
		{"postgresql://h/db?sslmode=disable", "postgresql://h/db?search_path=s1&sslmode=disable"},
		{"postgres://h/db?search_path=old", "postgres://h/db?search_path=s1"},
		{"host=127.0.0.1 dbname=db", "host=127.0.0.1 dbname=db search_path=s1"},
	}
	for _, tc := range tests {
		got, err := pgtest.WithSearchPath(tc.dsn, "s1")
		require.NoError(t, err, tc.dsn)
		assert.Equal(t, tc.want, got, tc.dsn)
	}
	_, err := pgtest.WithSearchPath("postgres://h/db\x7f", "s1")
	assert.Error(t, err)
}

// Two schemas on one server do not see each other's tables.
func TestSchemaIsolation(t *testing.T) {
	a, b := pgtest.Schema(t), pgtest.Schema(t)
	dbA, err := sql.Open("pgx", a)
	require.NoError(t, err)
	defer dbA.Close()
	dbB, err := sql.Open("pgx", b)
	require.NoError(t, err)
	defer dbB.Close()
	_, err = dbA.Exec("CREATE TABLE t (x BIGINT)")
	require.NoError(t, err)
	_, err = dbB.Exec("SELECT x FROM t")
	assert.Error(t, err, "schema b sees schema a's table")
	var n int
	require.NoError(t, dbA.QueryRow("SELECT count(*) FROM t").Scan(&n))
	assert.Equal(t, 0, n)
}
