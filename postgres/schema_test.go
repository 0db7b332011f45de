package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/postgres"
)

// Replicas that start together migrate once; a database migrated by a
// newer build is refused with both versions named.
func TestMigrations(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := postgres.Open(ctx, dsn, nil)
			if assert.NoError(t, err) {
				db.Close()
			}
		}()
	}
	wg.Wait()
	db := open(t, dsn)
	var n int
	require.NoError(t, db.Pool().QueryRow(ctx, `SELECT count(*) FROM keel_schema_migrations`).Scan(&n))
	assert.Equal(t, postgres.SchemaVersion(), n, "each step applied once")

	_, err := db.Pool().Exec(ctx, `INSERT INTO keel_schema_migrations (version, name, applied_at) VALUES (999, 'future', now())`)
	require.NoError(t, err)
	_, err = postgres.Open(ctx, dsn, nil)
	assert.ErrorContains(t, err, "schema version 999, newer than this build supports (1)")
}
