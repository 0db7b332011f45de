package sqlstore

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/storetest"
)

// inOneBatch runs the writes of calls concurrently while the writer is
// held, so that they reach it as one batch of batch writes, and returns
// their errors in order.
func inOneBatch(t *testing.T, s *Store, batch int, calls ...func() error) []error {
	t.Helper()
	require.Len(t, s.queues, 1)
	inTx, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.write(context.Background(), func(context.Context, *sql.Tx) error {
			close(inTx)
			<-release
			return nil
		})
	}()
	<-inTx
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = call() }()
	}
	require.Eventually(t, func() bool { return len(s.queues[0]) == batch }, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	require.NoError(t, <-held)
	return errs
}

// The enqueues, resolutions and acknowledgments of one batch share their
// statements, and each still gets the result it would get alone: a write
// that cannot succeed fails by itself and stores nothing, the others
// commit.
func testGroupedBatch(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Now()
	lease, err := s.AcquireLease(ctx, "w", "node-1", now, time.Hour)
	require.NoError(t, err)
	fence, stale := lease.Fence(), aacp.Fence{AgentID: "w", Token: lease.Token + 5}

	used := storetest.Request("a", "w", now) // holds seq 1 of a→w
	require.NoError(t, s.Enqueue(ctx, used, storetest.Message(used, 1, now), fence))
	final := storetest.Request("b", "w", now)
	require.NoError(t, s.Enqueue(ctx, final, storetest.Message(final, 1, now), fence))
	require.NoError(t, s.MarkCompleted(ctx, final.RequestID, aacp.OutcomeCompleted, ""))
	open := storetest.Request("c", "w", now)
	require.NoError(t, s.Enqueue(ctx, open, storetest.Message(open, 1, now), fence))

	fresh := storetest.Request("d", "w", now)
	twin := storetest.Request("e", "w", now)
	twin.RequestID = fresh.RequestID // the same id, sent twice at once
	again := storetest.Request("f", "w", now)
	again.RequestID = used.RequestID // recorded already
	fenced := storetest.Request("g", "w", now)
	conflict := storetest.Request("a", "w", now) // seq 1 of a→w is used
	response := storetest.Message(&aacp.RequestRecord{RequestID: open.RequestID, SourceAgentID: "w", TargetAgentID: "c",
		MessageType: aacp.MessageResponse, Payload: open.Payload}, 1, now)
	finalResponse := storetest.Message(&aacp.RequestRecord{RequestID: final.RequestID, SourceAgentID: "w", TargetAgentID: "b",
		MessageType: aacp.MessageResponse, Payload: final.Payload}, 1, now)
	var appliedOpen, appliedFinal bool
	resolve := func(id string, applied *bool, msg *aacp.MessageRecord) func() error {
		return func() error {
			var err error
			*applied, err = s.Resolve(ctx, &aacp.Resolution{RequestID: id, Outcome: aacp.OutcomeCompleted,
				Result: []byte(`{"ok":true}`), CompletedAt: now, Attempts: 1}, msg, fence)
			return err
		}
	}
	var missingApplied bool
	grouped := s.groupedRuns.Load()
	errs := inOneBatch(t, s, 10,
		func() error { return s.Enqueue(ctx, fresh, storetest.Message(fresh, 1, now), fence) },
		func() error { return s.Enqueue(ctx, twin, storetest.Message(twin, 1, now), fence) },
		func() error { return s.Enqueue(ctx, again, storetest.Message(again, 1, now), fence) },
		func() error { return s.Enqueue(ctx, fenced, storetest.Message(fenced, 1, now), stale) },
		func() error { return s.Enqueue(ctx, conflict, storetest.Message(conflict, 1, now), fence) },
		resolve(open.RequestID, &appliedOpen, response),
		resolve(final.RequestID, &appliedFinal, finalResponse),
		resolve("missing", &missingApplied, nil),
		func() error {
			return s.Acknowledge(ctx, []aacp.Ack{{Source: "a", Target: "w", Seq: 1, Fence: fence},
				{Source: "g", Target: "w", Seq: 7, Fence: stale}})
		},
		func() error { return s.Acknowledge(ctx, []aacp.Ack{{Source: "c", Target: "w", Seq: 1}}) },
	)
	assert.Equal(t, grouped+1, s.groupedRuns.Load(), "the batch ran grouped")
	assert.Zero(t, s.ungroupedRuns.Load())

	// Of the two sends of one id, exactly one claimed it.
	require.True(t, (errs[0] == nil) != (errs[1] == nil), "fresh: %v, twin: %v", errs[0], errs[1])
	loser, winner := twin, fresh
	if errs[0] != nil {
		loser, winner = fresh, twin
		assert.ErrorIs(t, errs[0], aacp.ErrDuplicateRequest)
	} else {
		assert.ErrorIs(t, errs[1], aacp.ErrDuplicateRequest)
	}
	got, err := s.GetRequestRecord(ctx, fresh.RequestID)
	require.NoError(t, err)
	assert.Equal(t, winner.SourceAgentID, got.SourceAgentID)
	last, err := s.GetLastSequence(ctx, loser.SourceAgentID, "w")
	require.NoError(t, err)
	assert.Zero(t, last, "the losing send raised its pair's sequence")

	assert.ErrorIs(t, errs[2], aacp.ErrDuplicateRequest)
	got, err = s.GetRequestRecord(ctx, used.RequestID)
	require.NoError(t, err)
	assert.Equal(t, "a", got.SourceAgentID, "a duplicate replaced the recorded request")

	assert.ErrorIs(t, errs[3], aacp.ErrLeaseLost)
	_, err = s.GetRequestRecord(ctx, fenced.RequestID)
	assert.ErrorIs(t, err, aacp.ErrNotFound, "a stale enqueue stored its request")

	assert.ErrorIs(t, errs[4], aacp.ErrSeqConflict)
	_, err = s.GetRequestRecord(ctx, conflict.RequestID)
	assert.ErrorIs(t, err, aacp.ErrNotFound, "a conflicting enqueue stored its request")

	require.NoError(t, errs[5])
	assert.True(t, appliedOpen)
	got, err = s.GetRequestRecord(ctx, open.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeCompleted, got.Status)
	assert.Equal(t, 1, got.Attempts)
	assert.JSONEq(t, `{"ok":true}`, string(got.Result))
	_, err = s.GetMessageRecord(ctx, response.MessageID)
	assert.NoError(t, err, "the response of an applied resolution")

	require.NoError(t, errs[6])
	assert.False(t, appliedFinal, "a final request resolved again")
	_, err = s.GetMessageRecord(ctx, finalResponse.MessageID)
	assert.ErrorIs(t, err, aacp.ErrNotFound, "a resolution not applied stored its response")
	last, err = s.GetLastSequence(ctx, "w", "b")
	require.NoError(t, err)
	assert.Zero(t, last)

	assert.ErrorIs(t, errs[7], aacp.ErrNotFound)
	assert.False(t, missingApplied)

	assert.ErrorIs(t, errs[8], aacp.ErrLeaseLost)
	ack, err := s.GetAck(ctx, "a", "w")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), ack, "the live acknowledgment")
	ack, err = s.GetAck(ctx, "g", "w")
	require.NoError(t, err)
	assert.Zero(t, ack, "the stale acknowledgment")
	require.NoError(t, errs[9])
	ack, err = s.GetAck(ctx, "c", "w")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), ack)
	pending, err := s.GetUnacknowledgedMessages(ctx, "c", "w")
	require.NoError(t, err)
	assert.Empty(t, pending)
}

func TestGroupedBatchSQLite(t *testing.T) { testGroupedBatch(t, openSQLiteStore(t)) }

func TestGroupedBatchPostgres(t *testing.T) {
	testGroupedBatch(t, openPostgresStore(t, WithWriters(1)))
}

// Two writes of one batch using the same seq on a pair make the grouped
// path give up: the batch runs one write at a time, and exactly one of
// them gets the seq.
func testGroupedGivesUp(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Now()
	one, two := storetest.Request("a", "b", now), storetest.Request("a", "b", now)
	errs := inOneBatch(t, s, 2,
		func() error { return s.Enqueue(ctx, one, storetest.Message(one, 1, now), aacp.Fence{}) },
		func() error { return s.Enqueue(ctx, two, storetest.Message(two, 1, now), aacp.Fence{}) },
	)
	assert.Equal(t, int64(1), s.ungroupedRuns.Load())
	require.True(t, (errs[0] == nil) != (errs[1] == nil), "one: %v, two: %v", errs[0], errs[1])
	for i, req := range []*aacp.RequestRecord{one, two} {
		_, err := s.GetRequestRecord(ctx, req.RequestID)
		if errs[i] != nil {
			assert.ErrorIs(t, errs[i], aacp.ErrSeqConflict)
			assert.ErrorIs(t, err, aacp.ErrNotFound)
		} else {
			assert.NoError(t, err)
		}
	}
}

// A grouped statement that fails part way (the second of two messages of
// one batch reusing the first's id) leaves nothing of the batch: the
// transaction is rolled back and the batch runs one write at a time, so
// the first write commits whole and the second stores nothing at all (no
// request, no message, its pair's sequence unchanged).
func testGroupedStatementFails(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Now()
	one, two := storetest.Request("a", "b", now), storetest.Request("c", "b", now)
	m1, m2 := storetest.Message(one, 1, now), storetest.Message(two, 1, now)
	m2.MessageID = m1.MessageID
	m2.Envelope.MessageID = m1.MessageID
	errs := inOneBatch(t, s, 2,
		func() error { return s.Enqueue(ctx, one, m1, aacp.Fence{}) },
		func() error { return s.Enqueue(ctx, two, m2, aacp.Fence{}) },
	)
	assert.Equal(t, int64(1), s.ungroupedRuns.Load())
	require.True(t, (errs[0] == nil) != (errs[1] == nil), "one: %v, two: %v", errs[0], errs[1])
	ok, failed := one, two
	if errs[0] != nil {
		ok, failed = two, one
	}
	_, err := s.GetRequestRecord(ctx, ok.RequestID)
	assert.NoError(t, err)
	m, err := s.GetMessageRecord(ctx, m1.MessageID)
	require.NoError(t, err)
	assert.Equal(t, ok.SourceAgentID, m.Envelope.SourceAgentID)
	_, err = s.GetRequestRecord(ctx, failed.RequestID)
	assert.ErrorIs(t, err, aacp.ErrNotFound)
	seq, err := s.GetLastSequence(ctx, failed.SourceAgentID, "b")
	require.NoError(t, err)
	assert.Zero(t, seq)
}

func TestGroupedStatementFailsSQLite(t *testing.T) { testGroupedStatementFails(t, openSQLiteStore(t)) }

func TestGroupedStatementFailsPostgres(t *testing.T) {
	testGroupedStatementFails(t, openPostgresStore(t, WithWriters(1)))
}

func TestGroupedGivesUpSQLite(t *testing.T) { testGroupedGivesUp(t, openSQLiteStore(t)) }

func TestGroupedGivesUpPostgres(t *testing.T) {
	testGroupedGivesUp(t, openPostgresStore(t, WithWriters(1)))
}

// A batch that claims a request id and resolves the same request (a
// MarkFailed racing the send) decides it as if the claim came first, on
// both stores: the resolution finds the request claimed in its batch.
func testGroupedClaimAndResolveOne(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Now()
	req := storetest.Request("a", "w", now)
	other := storetest.Request("b", "w", now)
	var applied bool
	grouped := s.groupedRuns.Load()
	errs := inOneBatch(t, s, 3,
		func() error { return s.Enqueue(ctx, req, storetest.Message(req, 1, now), aacp.Fence{}) },
		func() error { return s.Enqueue(ctx, other, storetest.Message(other, 1, now), aacp.Fence{}) },
		func() error {
			var err error
			applied, err = s.Resolve(ctx, &aacp.Resolution{RequestID: req.RequestID, Outcome: aacp.OutcomeFailed,
				CompletedAt: now}, nil, aacp.Fence{})
			return err
		},
	)
	assert.Equal(t, grouped+1, s.groupedRuns.Load(), "the batch ran grouped")
	for i, err := range errs {
		require.NoError(t, err, i)
	}
	assert.True(t, applied)
	got, err := s.GetRequestRecord(ctx, req.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeFailed, got.Status)
	got, err = s.GetRequestRecord(ctx, other.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeUnknown, got.Status)
}

func TestGroupedClaimAndResolveOneSQLite(t *testing.T) {
	testGroupedClaimAndResolveOne(t, openSQLiteStore(t))
}

func TestGroupedClaimAndResolveOnePostgres(t *testing.T) {
	testGroupedClaimAndResolveOne(t, openPostgresStore(t, WithWriters(1)))
}
