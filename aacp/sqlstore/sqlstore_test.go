package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/aacp/storetest"
	"github.com/keelmcp/keel/internal/pgtest"
)

func openSQLite(t *testing.T) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	require.NoError(t, err)
	return s
}

func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) aacp.Store { return openSQLite(t) })
}

func TestPostgresConformance(t *testing.T) {
	pgtest.DSN(t) // skip the whole suite, not each case, without a server
	storetest.Run(t, func(t *testing.T) aacp.Store {
		s, err := sqlstore.OpenPostgres(pgtest.Schema(t))
		require.NoError(t, err)
		return s
	})
}
