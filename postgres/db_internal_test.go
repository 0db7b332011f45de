package postgres

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/internal/pgtest"
	"github.com/keelmcp/keel/mcp"
)

// A subscriber that does not keep up holds at most handlerQueue
// notifications; the others are dropped with a warning naming the
// channel, and the listener goes on.
func TestSlowSubscriberBounded(t *testing.T) {
	defer func(n int) { handlerQueue = n }(handlerQueue)
	handlerQueue = 2
	logs := &exampletest.SafeBuffer{}
	ctx := context.Background()
	db, err := Open(ctx, pgtest.Schema(t), &Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	defer db.Close()
	release := make(chan struct{})
	got := make(chan string, 16)
	stop := db.subscribe(chanFanOut, func(_, p string) {
		<-release
		got <- p
	}, nil)
	for _, p := range []string{"1", "2", "3", "4", "5"} {
		_, err := db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, chanFanOut, "other|"+p)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return bytes.Count([]byte(logs.String()), []byte("notification dropped")) >= 2 },
		5*time.Second, 10*time.Millisecond, "two of five dropped: one being delivered, two queued")
	assert.Contains(t, logs.String(), `"channel":"keel_fanout"`)
	close(release)
	var delivered []string
	for range 3 {
		select {
		case p := <-got:
			delivered = append(delivered, p)
		case <-time.After(5 * time.Second):
			t.Fatal("the queued notifications were not delivered")
		}
	}
	assert.Equal(t, []string{"1", "2", "3"}, delivered, "in order")
	stop()
}

// Open refuses the replica ids a notification's origin cannot carry.
func TestOpenRejectsReservedReplicaID(t *testing.T) {
	dsn := pgtest.Schema(t)
	for _, id := range []string{"a|b", sweeperOrigin} {
		_, err := Open(context.Background(), dsn, &Options{ReplicaID: id})
		require.Error(t, err, id)
		assert.Contains(t, err.Error(), "ReplicaID")
	}
}

// Close does not wait for a stored change's read that stalls (here on a
// table lock): the read's context ends with the DB.
func TestCloseDoesNotWaitForStalledPayloadRead(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	admin, err := Open(ctx, dsn, nil)
	require.NoError(t, err)
	defer admin.Close()
	db, err := Open(ctx, dsn, nil)
	require.NoError(t, err)
	stop := NewFanOut(db).Subscribe(func(mcp.Change) {})
	defer stop()
	tx, err := admin.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the lock only
	_, err = tx.Exec(ctx, `LOCK TABLE keel_fanout_payloads IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	_, err = admin.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, chanFanOut, "other|@1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the read waits on the lock
		var n int
		_ = admin.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT payload FROM keel_fanout_payloads%' AND wait_event_type = 'Lock'`).Scan(&n)
		return n > 0
	}, 5*time.Second, 10*time.Millisecond)
	start := time.Now()
	db.Close()
	assert.Less(t, time.Since(start), 2*time.Second, "Close waited for the stalled read")
}
