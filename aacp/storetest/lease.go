package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/mcp"
)

// leaseCases are the lease, fencing and conditional-retry cases of Run.
var leaseCases = []struct {
	name string
	f    func(t *testing.T, s aacp.Store)
}{
	{"LeaseAcquire", testLeaseAcquire},
	{"LeaseRenew", testLeaseRenew},
	{"LeaseExpireAndTakeOver", testLeaseTakeover},
	{"LeaseRelease", testLeaseRelease},
	{"LeaseAcquireConcurrent", testLeaseConcurrent},
	{"FencedResolve", testFencedResolve},
	{"FencedUpdateRetry", testFencedUpdateRetry},
	{"UpdateRetryNeverOverwritesFinal", testUpdateRetryFinal},
}

const ttl = 10 * time.Second

func equalLease(t *testing.T, want, got *aacp.Lease) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.AgentID, got.AgentID)
	assert.Equal(t, want.Owner, got.Owner)
	assert.Equal(t, want.Token, got.Token)
	equalTime(t, want.ExpiresAt, got.ExpiresAt, "lease ExpiresAt")
}

func testLeaseAcquire(t *testing.T, s aacp.Store) {
	_, err := s.GetLease(ctx(), "w")
	require.ErrorIs(t, err, aacp.ErrNotFound)

	l, err := s.AcquireLease(ctx(), "w", "n1", base, ttl)
	require.NoError(t, err)
	want := &aacp.Lease{AgentID: "w", Owner: "n1", Token: 1, ExpiresAt: base.Add(ttl)}
	equalLease(t, want, l)
	got, err := s.GetLease(ctx(), "w")
	require.NoError(t, err)
	equalLease(t, want, got)
	assert.Equal(t, aacp.Fence{AgentID: "w", Token: 1}, l.Fence())

	// Another owner, before the expiry: refused, and told who holds it.
	held, err := s.AcquireLease(ctx(), "w", "n2", base.Add(ttl-time.Millisecond), ttl)
	require.ErrorIs(t, err, aacp.ErrLeaseHeld)
	equalLease(t, want, held)
	got, err = s.GetLease(ctx(), "w")
	require.NoError(t, err)
	equalLease(t, want, got)

	// Other agents are independent.
	l2, err := s.AcquireLease(ctx(), "v", "n2", base, ttl)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), l2.Token)
}

func testLeaseRenew(t *testing.T, s aacp.Store) {
	l, err := s.AcquireLease(ctx(), "w", "n1", base, ttl)
	require.NoError(t, err)
	r, err := s.RenewLease(ctx(), l, base.Add(time.Second), ttl)
	require.NoError(t, err)
	want := &aacp.Lease{AgentID: "w", Owner: "n1", Token: 1, ExpiresAt: base.Add(time.Second + ttl)}
	equalLease(t, want, r)
	got, err := s.GetLease(ctx(), "w")
	require.NoError(t, err)
	equalLease(t, want, got)
	// The renewal moved the expiry: another owner is still refused.
	_, err = s.AcquireLease(ctx(), "w", "n2", base.Add(ttl), ttl)
	require.ErrorIs(t, err, aacp.ErrLeaseHeld)

	// A wrong token or owner is not the holder.
	for _, bad := range []aacp.Lease{{AgentID: "w", Owner: "n1", Token: 2}, {AgentID: "w", Owner: "n2", Token: 1},
		{AgentID: "nobody", Owner: "n1", Token: 1}} {
		_, err := s.RenewLease(ctx(), &bad, base.Add(2*time.Second), ttl)
		require.ErrorIs(t, err, aacp.ErrLeaseLost, "%+v", bad)
	}

	// Expired but not taken over: the holder may still renew it.
	r, err = s.RenewLease(ctx(), l, base.Add(time.Hour), ttl)
	require.NoError(t, err)
	equalTime(t, base.Add(time.Hour+ttl), r.ExpiresAt, "renewed after expiry")
	assert.Equal(t, uint64(1), r.Token, "a renewal keeps the token")
}

func testLeaseTakeover(t *testing.T, s aacp.Store) {
	l1, err := s.AcquireLease(ctx(), "w", "n1", base, ttl)
	require.NoError(t, err)
	// At the expiry instant, another owner takes it over with a new token.
	l2, err := s.AcquireLease(ctx(), "w", "n2", base.Add(ttl), ttl)
	require.NoError(t, err)
	equalLease(t, &aacp.Lease{AgentID: "w", Owner: "n2", Token: 2, ExpiresAt: base.Add(2 * ttl)}, l2)

	// The old holder can neither renew nor release it any more.
	_, err = s.RenewLease(ctx(), l1, base.Add(ttl), ttl)
	require.ErrorIs(t, err, aacp.ErrLeaseLost)
	require.ErrorIs(t, s.ReleaseLease(ctx(), l1), aacp.ErrLeaseLost)
	_, err = s.AcquireLease(ctx(), "w", "n1", base.Add(ttl+time.Second), ttl)
	require.ErrorIs(t, err, aacp.ErrLeaseHeld)
	got, err := s.GetLease(ctx(), "w")
	require.NoError(t, err)
	equalLease(t, l2, got)

	// The same owner cannot take over its own held lease (two processes
	// given one node ID never own an agent together) ...
	_, err = s.AcquireLease(ctx(), "w", "n2", base.Add(ttl+time.Second), ttl)
	require.ErrorIs(t, err, aacp.ErrLeaseHeld)
	// ... but once it expired, it acquires it again with a new token,
	// which fences its previous one.
	l3, err := s.AcquireLease(ctx(), "w", "n2", base.Add(2*ttl), ttl)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), l3.Token)
	_, err = s.RenewLease(ctx(), l2, base.Add(2*ttl), ttl)
	require.ErrorIs(t, err, aacp.ErrLeaseLost)
}

func testLeaseRelease(t *testing.T, s aacp.Store) {
	l1, err := s.AcquireLease(ctx(), "w", "n1", base, ttl)
	require.NoError(t, err)
	require.NoError(t, s.ReleaseLease(ctx(), l1))
	got, err := s.GetLease(ctx(), "w")
	require.NoError(t, err)
	assert.Empty(t, got.Owner, "released")
	require.ErrorIs(t, s.ReleaseLease(ctx(), l1), aacp.ErrLeaseLost, "released twice")
	_, err = s.RenewLease(ctx(), l1, base, ttl)
	require.ErrorIs(t, err, aacp.ErrLeaseLost, "a released lease cannot be renewed")

	// Released: another owner acquires it at once, long before the expiry.
	l2, err := s.AcquireLease(ctx(), "w", "n2", base.Add(time.Millisecond), ttl)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), l2.Token)
}

// testLeaseConcurrent: owners racing for a free lease; exactly one wins.
func testLeaseConcurrent(t *testing.T, s aacp.Store) {
	const owners = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for i := 0; i < owners; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			owner := fmt.Sprintf("n%d", i)
			_, err := s.AcquireLease(ctx(), "w", owner, base, ttl)
			if err == nil {
				mu.Lock()
				won = append(won, owner)
				mu.Unlock()
				return
			}
			assert.ErrorIs(t, err, aacp.ErrLeaseHeld)
		}(i)
	}
	wg.Wait()
	require.Len(t, won, 1)
	got, err := s.GetLease(ctx(), "w")
	require.NoError(t, err)
	assert.Equal(t, won[0], got.Owner)
	assert.Equal(t, uint64(1), got.Token)
}

func testFencedResolve(t *testing.T, s aacp.Store) {
	l1, err := s.AcquireLease(ctx(), "b", "n1", base, ttl)
	require.NoError(t, err)
	r := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r, Message(r, 1, base), aacp.Fence{}))
	resp := func(seq uint64) *aacp.MessageRecord {
		m := Message(r, seq, base)
		m.Envelope.SourceAgentID, m.Envelope.TargetAgentID, m.Envelope.MessageType = "b", "a", aacp.MessageResponse
		m.Envelope.Payload = json.RawMessage(`{"outcome":"COMPLETED"}`)
		return m
	}
	res := &aacp.Resolution{RequestID: r.RequestID, Outcome: aacp.OutcomeCompleted, Result: json.RawMessage(`1`), CompletedAt: base}

	// Fences that are not current: nothing stored, neither the resolution
	// nor the response nor its seq.
	stale := resp(1)
	for _, f := range []aacp.Fence{{AgentID: "b", Token: 2}, {AgentID: "other", Token: 1}} {
		applied, err := s.Resolve(ctx(), res, stale, f)
		require.ErrorIs(t, err, aacp.ErrLeaseLost, "%+v", f)
		assert.False(t, applied)
	}
	// Taken over: the first holder's token is stale.
	_, err = s.AcquireLease(ctx(), "b", "n2", base.Add(ttl), ttl)
	require.NoError(t, err)
	applied, err := s.Resolve(ctx(), res, stale, l1.Fence())
	require.ErrorIs(t, err, aacp.ErrLeaseLost)
	assert.False(t, applied)
	got, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeUnknown, got.Status)
	_, err = s.GetMessageRecord(ctx(), stale.MessageID)
	require.ErrorIs(t, err, aacp.ErrNotFound)
	last, err := s.GetLastSequence(ctx(), "b", "a")
	require.NoError(t, err)
	assert.Zero(t, last)

	// The current holder's fence: applied.
	applied, err = s.Resolve(ctx(), res, resp(1), aacp.Fence{AgentID: "b", Token: 2})
	require.NoError(t, err)
	assert.True(t, applied)
	got, err = s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeCompleted, got.Status)

	// A released lease fences its holder too.
	r2 := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r2, Message(r2, 2, base), aacp.Fence{}))
	require.NoError(t, s.ReleaseLease(ctx(), &aacp.Lease{AgentID: "b", Owner: "n2", Token: 2}))
	applied, err = s.Resolve(ctx(), &aacp.Resolution{RequestID: r2.RequestID, Outcome: aacp.OutcomeCompleted, CompletedAt: base},
		nil, aacp.Fence{AgentID: "b", Token: 2})
	require.ErrorIs(t, err, aacp.ErrLeaseLost)
	assert.False(t, applied)
	// Unfenced writes (MarkFailed from outside) are not conditioned.
	require.NoError(t, s.MarkFailed(ctx(), r2.RequestID, &mcp.StructuredError{Code: mcp.ErrInternal, Message: "x"}))
}

func testFencedUpdateRetry(t *testing.T, s aacp.Store) {
	l1, err := s.AcquireLease(ctx(), "b", "n1", base, ttl)
	require.NoError(t, err)
	r := Request("a", "b", base)
	require.NoError(t, s.PutRequestRecord(ctx(), r))
	se := &mcp.StructuredError{Code: aacp.CodeUnavailable, Message: "later"}
	applied, err := s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: r.RequestID, Attempts: 1, Error: se, Fence: l1.Fence()})
	require.NoError(t, err)
	assert.True(t, applied)

	_, err = s.AcquireLease(ctx(), "b", "n2", base.Add(ttl), ttl)
	require.NoError(t, err)
	applied, err = s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: r.RequestID, Attempts: 2, Fence: l1.Fence()})
	require.ErrorIs(t, err, aacp.ErrLeaseLost)
	assert.False(t, applied)
	got, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	assert.Equal(t, 1, got.Attempts, "nothing stored")
	applied, err = s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: r.RequestID, Attempts: 2, Fence: aacp.Fence{AgentID: "b", Token: 2}})
	require.NoError(t, err)
	assert.True(t, applied)
}

func testUpdateRetryFinal(t *testing.T, s aacp.Store) {
	_, err := s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: uuid(), Attempts: 1})
	require.ErrorIs(t, err, aacp.ErrNotFound)

	r := Request("a", "b", base)
	require.NoError(t, s.PutRequestRecord(ctx(), r))
	first := &mcp.StructuredError{Code: aacp.CodeUnavailable, Message: "first"}
	applied, err := s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: r.RequestID, Attempts: 1, Error: first})
	require.NoError(t, err)
	assert.True(t, applied)
	// Without an error: the recorded one is kept.
	applied, err = s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: r.RequestID, Attempts: 2})
	require.NoError(t, err)
	assert.True(t, applied)
	want := *r
	want.Attempts, want.Error = 2, first
	got, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	EqualRequest(t, &want, got)

	// Failed from outside: a later retry update is a no-op, the terminal
	// state stays.
	external := &mcp.StructuredError{Code: mcp.ErrInternal, Message: "cancelled by an operator"}
	require.NoError(t, s.MarkFailed(ctx(), r.RequestID, external))
	failed, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	applied, err = s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: r.RequestID, Attempts: 3,
		Error: &mcp.StructuredError{Code: aacp.CodeUnavailable, Message: "again"}})
	require.NoError(t, err)
	assert.False(t, applied)
	got, err = s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	EqualRequest(t, failed, got)
	assert.Equal(t, aacp.OutcomeFailed, got.Status)
	assert.Equal(t, external, got.Error)
	pending, err := s.ListPendingRequests(ctx(), time.Time{})
	require.NoError(t, err)
	assert.Empty(t, pending, "the request does not become pending again")

	// The same after a completion.
	r2 := Request("a", "b", base)
	require.NoError(t, s.PutRequestRecord(ctx(), r2))
	require.NoError(t, s.MarkCompleted(ctx(), r2.RequestID, aacp.OutcomeCompleted, "ref"))
	applied, err = s.UpdateRetry(ctx(), &aacp.RetryUpdate{RequestID: r2.RequestID, Attempts: 2, Error: first})
	require.NoError(t, err)
	assert.False(t, applied)
	got, err = s.GetRequestRecord(ctx(), r2.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeCompleted, got.Status)
	assert.Nil(t, got.Error)
}
