package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/postgres"
	"github.com/keelmcp/keel/transport/streamhttp"
)

func replay(t *testing.T, s streamhttp.EventStore, session, stream string, after uint64) ([]string, error) {
	t.Helper()
	var got []string
	err := s.Replay(context.Background(), session, stream, after, func(seq uint64, data []byte) error {
		got = append(got, fmt.Sprintf("%d:%s", seq, data))
		return nil
	})
	return got, err
}

// Events appended through one replica are replayed through another, in
// order, after the id asked for; lost events are reported, and the
// per-session bound deletes the oldest first, the newest never.
func TestEventStore(t *testing.T) {
	dsn := pgtest.Schema(t)
	a := postgres.NewEventStore(open(t, dsn), &postgres.EventStoreOptions{MaxBytesPerSession: 10})
	b := postgres.NewEventStore(open(t, dsn), &postgres.EventStoreOptions{MaxBytesPerSession: 10})
	ctx := context.Background()
	for i, d := range []string{"aa", "bb", "cc"} {
		require.NoError(t, a.Append(ctx, "s1", "st", uint64(i+1), []byte(d)))
	}
	assert.Error(t, a.Append(ctx, "s1", "st", 3, []byte("x")), "a seq again is refused")

	got, err := replay(t, b, "s1", "st", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"2:bb", "3:cc"}, got, "replayed through another replica")
	got, err = replay(t, b, "s1", "st", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"1:aa", "2:bb", "3:cc"}, got)
	got, err = replay(t, b, "s1", "st", 3)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = replay(t, b, "s1", "st", 9)
	assert.ErrorIs(t, err, streamhttp.ErrEventsLost, "an id the stream never had")
	_, err = replay(t, b, "s1", "other", 2)
	assert.ErrorIs(t, err, streamhttp.ErrEventsLost, "an unknown stream has no events")
	got, err = replay(t, b, "s1", "other", 0)
	require.NoError(t, err)
	assert.Empty(t, got)

	require.NoError(t, b.Append(ctx, "s1", "st2", 1, []byte("dddddd"))) // 12 bytes in all: aa goes
	_, err = replay(t, a, "s1", "st", 0)
	assert.ErrorIs(t, err, streamhttp.ErrEventsLost, "the oldest event was deleted for the bound")
	got, err = replay(t, a, "s1", "st", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"2:bb", "3:cc"}, got)
	require.NoError(t, a.Append(ctx, "s1", "st2", 2, []byte("0123456789ABC")))
	got, err = replay(t, a, "s1", "st2", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"2:0123456789ABC"}, got, "the newest is kept even over the bound")

	require.NoError(t, b.SessionClosed(ctx, "s1"))
	got, err = replay(t, a, "s1", "st2", 0)
	require.NoError(t, err)
	assert.Empty(t, got, "a closed session's events are gone")
}
