package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/postgres"
)

// A state id is accepted once across replicas, even when they race; the
// bound counts all replicas' ids and makes room as they expire.
func TestUsedStatesShared(t *testing.T) {
	dsn := pgtest.Schema(t)
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	tick := func() time.Time { return time.Unix(0, clock.Load()) }
	a, b := postgres.NewUsedStates(open(t, dsn), tick), postgres.NewUsedStates(open(t, dsn), tick)
	ctx := context.Background()
	exp := now.Add(time.Minute)

	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := a
			if i%2 == 1 {
				u = b
			}
			switch err := u.UseState(ctx, []byte("state-1"), exp, 3); {
			case err == nil:
				ok.Add(1)
			default:
				assert.ErrorIs(t, err, mcp.ErrStateUsed)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, ok.Load(), "accepted once in all")

	require.NoError(t, b.UseState(ctx, []byte("state-2"), exp, 3))
	require.NoError(t, a.UseState(ctx, []byte("state-3"), now.Add(2*time.Minute), 3))
	err := b.UseState(ctx, []byte("state-4"), exp, 3)
	assert.ErrorIs(t, err, mcp.ErrTooManyUsedStates, "MaxUsedStates counts every replica's states")
	assert.ErrorIs(t, a.UseState(ctx, []byte("state-1"), exp, 3), mcp.ErrStateUsed, "a full store still remembers")

	clock.Store(exp.Add(2 * time.Second).UnixNano()) // state-1 and state-2 expired
	require.NoError(t, b.UseState(ctx, []byte("state-4"), now.Add(3*time.Minute), 3), "room made by expiry")
	assert.ErrorIs(t, a.UseState(ctx, []byte("state-3"), now.Add(2*time.Minute), 3), mcp.ErrStateUsed)
}
