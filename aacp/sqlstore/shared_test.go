package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/aacp/storetest"
	"github.com/keelmcp/keel/internal/pgtest"
)

// Several handles on one database (as several processes would hold):
// every due message is claimed by exactly one of them, and concurrent
// migrations leave one schema.
func testSharedClaims(t *testing.T, open func() (*sqlstore.Store, error)) {
	const handles, total = 3, 90
	stores := make([]*sqlstore.Store, handles)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := open()
			assert.NoError(t, err)
			stores[i] = s
		}(i)
	}
	wg.Wait()
	for _, s := range stores {
		require.NotNil(t, s)
		t.Cleanup(func() { s.Close() })
	}
	ctx := context.Background()
	base := time.Now()
	for i := 0; i < total; i++ {
		r := storetest.Request(fmt.Sprintf("src%d", i%3), "dst", base)
		require.NoError(t, stores[i%handles].Enqueue(ctx, r, storetest.Message(r, uint64(i/3+1), base), aacp.Fence{}))
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	for i, s := range stores {
		wg.Add(1)
		go func(i int, s *sqlstore.Store) {
			defer wg.Done()
			for {
				got, err := s.ClaimDue(ctx, aacp.ClaimQuery{Owner: fmt.Sprintf("h%d", i), Targets: []string{"dst"},
					Now: base.Add(time.Second), Limit: 5, Backoff: func(int) time.Duration { return time.Hour }})
				if !assert.NoError(t, err) || len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					claimed[m.MessageID]++
				}
				mu.Unlock()
			}
		}(i, s)
	}
	wg.Wait()
	assert.Len(t, claimed, total)
	for id, n := range claimed {
		assert.Equal(t, 1, n, "message %s claimed %d times", id, n)
	}
}

func TestSQLiteSharedClaims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	testSharedClaims(t, func() (*sqlstore.Store, error) { return sqlstore.OpenSQLite(path) })
}

func TestPostgresSharedClaims(t *testing.T) {
	dsn := pgtest.Schema(t)
	testSharedClaims(t, func() (*sqlstore.Store, error) { return sqlstore.OpenPostgres(dsn) })
}

func TestPostgresMigrations(t *testing.T) {
	dsn := pgtest.Schema(t)
	s, err := sqlstore.OpenPostgres(dsn)
	require.NoError(t, err)
	defer s.Close()
	s2, err := sqlstore.OpenPostgres(dsn) // again: nothing to do
	require.NoError(t, err)
	defer s2.Close()
	v, err := s.AppliedMigrations(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4}, v)
	assert.Equal(t, "postgres", s.Dialect())
}
