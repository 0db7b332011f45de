package sqlstore

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Equal(t, []int{1}, v)
	assert.Equal(t, 1, SchemaVersion())
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
