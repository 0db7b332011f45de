package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/aacp/storetest"
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
	dsn := postgresDSN(t)
	storetest.Run(t, func(t *testing.T) aacp.Store {
		s, err := sqlstore.OpenPostgres(freshSchema(t, dsn))
		require.NoError(t, err)
		return s
	})
}
