package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
)

// deliveryCases are the cases of Run for the claim of request ids, the
// fencing of enqueues, acknowledgments and claims, and dead letters.
var deliveryCases = []struct {
	name string
	f    func(t *testing.T, s aacp.Store)
}{
	{"EnqueueClaimsRequestIDAtomically", testEnqueueClaimsRequestID},
	{"FencedEnqueue", testFencedEnqueue},
	{"FencedAcknowledge", testFencedAcknowledge},
	{"FencedClaim", testFencedClaim},
	{"QuarantineRetryDrop", testQuarantine},
}

// Of concurrent Enqueues of one request id (on distinct pairs, so that no
// seq conflict decides), exactly one succeeds; the others fail with
// ErrDuplicateRequest and store nothing.
func testEnqueueClaimsRequestID(t *testing.T, s aacp.Store) {
	const senders = 8
	r := Request("a", "b", base)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  int
		msgs = make([]*aacp.MessageRecord, senders)
	)
	for i := 0; i < senders; i++ {
		rec := *r
		rec.SourceAgentID = string(rune('a' + i))
		m := Message(&rec, 1, base)
		msgs[i] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Enqueue(ctx(), &rec, m, aacp.Fence{})
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
				return
			}
			assert.ErrorIs(t, err, aacp.ErrDuplicateRequest)
		}()
	}
	wg.Wait()
	require.Equal(t, 1, won)
	stored := 0
	for _, m := range msgs {
		if _, err := s.GetMessageRecord(ctx(), m.MessageID); err == nil {
			stored++
			last, err := s.GetLastSequence(ctx(), m.Envelope.SourceAgentID, "b")
			require.NoError(t, err)
			assert.Equal(t, uint64(1), last)
		} else {
			require.ErrorIs(t, err, aacp.ErrNotFound)
		}
	}
	assert.Equal(t, 1, stored, "only the winner's message is stored")
}

// An Enqueue fenced by a lease that is not current stores nothing.
func testFencedEnqueue(t *testing.T, s aacp.Store) {
	l1, err := s.AcquireLease(ctx(), "a", "n1", base, ttl)
	require.NoError(t, err)
	r := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r, Message(r, 1, base), l1.Fence()))
	_, err = s.AcquireLease(ctx(), "a", "n2", base.Add(ttl), ttl)
	require.NoError(t, err)
	r2 := Request("a", "b", base)
	m2 := Message(r2, 2, base)
	require.ErrorIs(t, s.Enqueue(ctx(), r2, m2, l1.Fence()), aacp.ErrLeaseLost)
	_, err = s.GetRequestRecord(ctx(), r2.RequestID)
	require.ErrorIs(t, err, aacp.ErrNotFound)
	_, err = s.GetMessageRecord(ctx(), m2.MessageID)
	require.ErrorIs(t, err, aacp.ErrNotFound)
	last, err := s.GetLastSequence(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last)
}

// An Ack with a stale fence is skipped (the error matches ErrLeaseLost);
// the others of the call are recorded.
func testFencedAcknowledge(t *testing.T, s aacp.Store) {
	l1, err := s.AcquireLease(ctx(), "b", "n1", base, ttl)
	require.NoError(t, err)
	r := Request("a", "b", base)
	m := Message(r, 1, base)
	require.NoError(t, s.Enqueue(ctx(), r, m, aacp.Fence{}))
	r2 := Request("x", "c", base)
	m2 := Message(r2, 1, base)
	require.NoError(t, s.Enqueue(ctx(), r2, m2, aacp.Fence{}))
	_, err = s.AcquireLease(ctx(), "b", "n2", base.Add(ttl), ttl)
	require.NoError(t, err)

	err = s.Acknowledge(ctx(), []aacp.Ack{{Source: "a", Target: "b", Seq: 1, Fence: l1.Fence()}, {Source: "x", Target: "c", Seq: 1}})
	require.ErrorIs(t, err, aacp.ErrLeaseLost)
	ack, err := s.GetAck(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Zero(t, ack, "the stale owner's acknowledgment is not recorded")
	got, err := s.GetMessageRecord(ctx(), m.MessageID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeUnknown, got.Status, "the new owner still gets the message")
	got, err = s.GetMessageRecord(ctx(), m2.MessageID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeCompleted, got.Status, "the unfenced ack of the same call is recorded")

	require.NoError(t, s.Acknowledge(ctx(), []aacp.Ack{{Source: "a", Target: "b", Seq: 1, Fence: aacp.Fence{AgentID: "b", Token: 2}}}))
	ack, err = s.GetAck(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), ack)
}

// A claim fenced by a lease that is not current claims nothing for that
// target, and still claims the others.
func testFencedClaim(t *testing.T, s aacp.Store) {
	l1, err := s.AcquireLease(ctx(), "b", "n1", base, ttl)
	require.NoError(t, err)
	r := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r, Message(r, 1, base), aacp.Fence{}))
	r2 := Request("a", "c", base)
	m2 := Message(r2, 1, base)
	require.NoError(t, s.Enqueue(ctx(), r2, m2, aacp.Fence{}))
	_, err = s.AcquireLease(ctx(), "b", "n2", base.Add(ttl), ttl)
	require.NoError(t, err)

	got, err := s.ClaimDue(ctx(), aacp.ClaimQuery{Owner: "n1", Targets: []string{"b", "c"}, Now: base.Add(ttl),
		Fences: []aacp.Fence{l1.Fence()}})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, m2.MessageID, got[0].MessageID)

	got, err = s.ClaimDue(ctx(), aacp.ClaimQuery{Owner: "n2", Targets: []string{"b"}, Now: base.Add(ttl),
		Fences: []aacp.Fence{{AgentID: "b", Token: 2}}})
	require.NoError(t, err)
	require.Len(t, got, 1, "the current owner claims it")
	assert.Equal(t, r.RequestID, got[0].RequestID)
}

// A quarantined message is listed with its reason, never claimed, leaves
// its request as it is, and can be retried (claimable again) or dropped.
func testQuarantine(t *testing.T, s aacp.Store) {
	r := Request("a", "b", base)
	m := Message(r, 1, base)
	require.NoError(t, s.Enqueue(ctx(), r, m, aacp.Fence{}))
	ok, err := s.Quarantine(ctx(), m.MessageID, "cannot decode")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = s.Quarantine(ctx(), m.MessageID, "again")
	require.NoError(t, err)
	assert.False(t, ok, "only an UNKNOWN message is quarantined")
	_, err = s.Quarantine(ctx(), "missing", "x")
	require.ErrorIs(t, err, aacp.ErrNotFound)

	got, err := s.GetMessageRecord(ctx(), m.MessageID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeFailed, got.Status)
	assert.Equal(t, "cannot decode", got.DeadReason)
	rec, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeUnknown, rec.Status, "the request is left as it is")
	claimed, err := s.ClaimDue(ctx(), aacp.ClaimQuery{Owner: "n", Targets: []string{"b"}, Now: base, IgnoreSchedule: true})
	require.NoError(t, err)
	assert.Empty(t, claimed)
	un, err := s.GetUnacknowledgedMessages(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Empty(t, un)

	dead, err := s.ListDeadLetters(ctx(), 0)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	d := dead[0]
	assert.Equal(t, m.MessageID, d.MessageID)
	assert.Equal(t, r.RequestID, d.RequestID)
	assert.Equal(t, "a", d.SourceAgentID)
	assert.Equal(t, "b", d.TargetAgentID)
	assert.Equal(t, uint64(1), d.Seq)
	assert.Equal(t, aacp.MessageRequest, d.MessageType)
	assert.Equal(t, "cannot decode", d.Reason)
	env, err := aacp.DecodeEnvelope(d.Raw)
	require.NoError(t, err)
	EqualEnvelope(t, &m.Envelope, env)

	// Retry: back in the queue, due at once, counted from zero.
	require.NoError(t, s.RetryDeadLetter(ctx(), m.MessageID, base.Add(ttl)))
	require.ErrorIs(t, s.RetryDeadLetter(ctx(), m.MessageID, base), aacp.ErrNotFound, "no longer a dead letter")
	claimed, err = s.ClaimDue(ctx(), aacp.ClaimQuery{Owner: "n", Targets: []string{"b"}, Now: base.Add(ttl)})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	assert.Equal(t, 1, claimed[0].RetryCount)
	assert.Empty(t, claimed[0].DeadReason)
	dead, err = s.ListDeadLetters(ctx(), 0)
	require.NoError(t, err)
	assert.Empty(t, dead)

	// Drop: deleted, and reported.
	ok, err = s.Quarantine(ctx(), m.MessageID, "poison")
	require.NoError(t, err)
	require.True(t, ok)
	d, err = s.DropDeadLetter(ctx(), m.MessageID)
	require.NoError(t, err)
	assert.Equal(t, "poison", d.Reason)
	_, err = s.GetMessageRecord(ctx(), m.MessageID)
	require.ErrorIs(t, err, aacp.ErrNotFound)
	_, err = s.DropDeadLetter(ctx(), m.MessageID)
	require.True(t, errors.Is(err, aacp.ErrNotFound))
}
