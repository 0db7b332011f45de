// Package storetest is the conformance suite of aacp.Store: every
// implementation (aacp.MemoryStore, the SQLite and PostgreSQL stores of
// aacp/sqlstore, and third-party ones) must pass Run. Besides the records,
// sequences, acknowledgments and claims, it checks agent leases (acquire,
// renew, expiry and takeover, release, concurrent acquisition), fenced
// writes (a stale fencing token stores nothing: resolutions, retries,
// enqueues, acknowledgments and claims), that retry updates never
// overwrite a final request, that Enqueue claims a request id atomically,
// and dead letters (quarantine, retry, drop).
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/mcp"
)

// Opener returns a new, empty store for one test; the suite closes it.
type Opener func(t *testing.T) aacp.Store

// Run runs the conformance suite, each case on a store of its own.
func Run(t *testing.T, open Opener) {
	cases := []struct {
		name string
		f    func(t *testing.T, s aacp.Store)
	}{
		{"RequestRecordRoundTrip", testRequestRoundTrip},
		{"MessageRecordRoundTrip", testMessageRoundTrip},
		{"Enqueue", testEnqueue},
		{"EnqueueSeqConflict", testEnqueueSeqConflict},
		{"Resolve", testResolve},
		{"ResolveWithResponse", testResolveWithResponse},
		{"MarkCompletedAndFailed", testMark},
		{"Sequences", testSequences},
		{"AcknowledgeAndUnacknowledged", testAcknowledge},
		{"ListPendingRequests", testListPending},
		{"ListMessagesInState", testListInState},
		{"PurgeExpired", testPurge},
		{"ClaimDue", testClaimDue},
		{"ClaimDueConcurrent", testClaimConcurrent},
		{"EnqueueConcurrentSamePair", testEnqueueConcurrent},
	}
	cases = append(cases, leaseCases...)
	cases = append(cases, deliveryCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { s.Close() })
			c.f(t, s)
		})
	}
}

// base is the time of the records of the suite (microsecond precision, as
// every store keeps at least that).
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var idCounter struct {
	sync.Mutex
	n uint64
}

// uuid returns a distinct UUID v4 string.
func uuid() string {
	idCounter.Lock()
	idCounter.n++
	n := idCounter.n
	idCounter.Unlock()
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", time.Now().UnixNano()&0xffffffff, n)
}

// Request returns a pending REQUEST record source→target created at at.
func Request(source, target string, at time.Time) *aacp.RequestRecord {
	return &aacp.RequestRecord{RequestID: uuid(), SourceAgentID: source, TargetAgentID: target,
		MessageType: aacp.MessageRequest, Payload: json.RawMessage(`{"n":1}`), Status: aacp.OutcomeUnknown,
		Timestamp: at, ExpiresAt: at.Add(time.Hour)}
}

// Message returns a pending message record of req with the given seq.
func Message(req *aacp.RequestRecord, seq uint64, at time.Time) *aacp.MessageRecord {
	id := uuid()
	return &aacp.MessageRecord{MessageID: id, RequestID: req.RequestID, Status: aacp.OutcomeUnknown,
		Timestamp: at, ExpiresAt: at.Add(time.Hour), NextRetryAt: at,
		Envelope: aacp.Envelope{MessageID: id, RequestID: req.RequestID, SourceAgentID: req.SourceAgentID,
			TargetAgentID: req.TargetAgentID, Seq: seq, MessageType: req.MessageType, Timestamp: at,
			Payload: req.Payload}}
}

func equalTime(t *testing.T, want, got time.Time, what string) {
	t.Helper()
	assert.True(t, want.Equal(got), "%s: want %v, got %v", what, want, got)
}

// EqualRequest asserts that two request records hold the same data.
func EqualRequest(t *testing.T, want, got *aacp.RequestRecord) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.RequestID, got.RequestID)
	assert.Equal(t, want.SourceAgentID, got.SourceAgentID)
	assert.Equal(t, want.TargetAgentID, got.TargetAgentID)
	assert.Equal(t, want.MessageType, got.MessageType)
	assert.JSONEq(t, string(want.Payload), string(got.Payload))
	assert.Equal(t, want.Status, got.Status)
	assert.Equal(t, want.Completion, got.Completion)
	if len(want.Result) > 0 || len(got.Result) > 0 {
		assert.JSONEq(t, string(want.Result), string(got.Result))
	}
	assert.Equal(t, want.Error, got.Error)
	assert.Equal(t, want.CompletionRef, got.CompletionRef)
	assert.Equal(t, want.Attempts, got.Attempts)
	equalTime(t, want.Deadline, got.Deadline, "Deadline")
	equalTime(t, want.Timestamp, got.Timestamp, "Timestamp")
	equalTime(t, want.CompletedAt, got.CompletedAt, "CompletedAt")
	equalTime(t, want.ExpiresAt, got.ExpiresAt, "ExpiresAt")
}

// EqualMessage asserts that two message records hold the same data.
func EqualMessage(t *testing.T, want, got *aacp.MessageRecord) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.MessageID, got.MessageID)
	assert.Equal(t, want.RequestID, got.RequestID)
	EqualEnvelope(t, &want.Envelope, &got.Envelope)
	assert.Equal(t, want.Status, got.Status)
	assert.Equal(t, want.RetryCount, got.RetryCount)
	assert.Equal(t, want.ClaimedBy, got.ClaimedBy)
	equalTime(t, want.Timestamp, got.Timestamp, "Timestamp")
	equalTime(t, want.ExpiresAt, got.ExpiresAt, "ExpiresAt")
	equalTime(t, want.NextRetryAt, got.NextRetryAt, "NextRetryAt")
}

// EqualEnvelope asserts that two envelopes hold the same data.
func EqualEnvelope(t *testing.T, want, got *aacp.Envelope) {
	t.Helper()
	w, g := *want, *got
	equalTime(t, w.Timestamp, g.Timestamp, "envelope timestamp")
	assert.JSONEq(t, string(w.Payload), string(g.Payload))
	w.Timestamp, g.Timestamp, w.Payload, g.Payload = time.Time{}, time.Time{}, nil, nil
	assert.Equal(t, w, g)
}

func ctx() context.Context { return context.Background() }

func testRequestRoundTrip(t *testing.T, s aacp.Store) {
	_, err := s.GetRequestRecord(ctx(), uuid())
	require.ErrorIs(t, err, aacp.ErrNotFound)

	r := Request("a", "b", base)
	r.Deadline = base.Add(time.Minute)
	require.NoError(t, s.PutRequestRecord(ctx(), r))
	got, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	EqualRequest(t, r, got)

	// Replace, with every optional member set.
	r2 := *r
	r2.Status, r2.Completion, r2.Result = aacp.OutcomeFailed, aacp.CompletionToolError, json.RawMessage(`[1,"x"]`)
	r2.Error = &mcp.StructuredError{Code: mcp.ErrInvalidArgument, Message: "bad", Details: map[string]any{"k": "v"}}
	r2.CompletionRef, r2.Attempts, r2.CompletedAt = "blob://1", 3, base.Add(time.Second)
	require.NoError(t, s.PutRequestRecord(ctx(), &r2))
	got, err = s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	EqualRequest(t, &r2, got)

	// What Get returns belongs to the caller.
	got.Status = aacp.OutcomeCompleted
	again, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeFailed, again.Status)
}

func testMessageRoundTrip(t *testing.T, s aacp.Store) {
	_, err := s.GetMessageRecord(ctx(), uuid())
	require.ErrorIs(t, err, aacp.ErrNotFound)
	r := Request("a", "b", base)
	m := Message(r, 7, base)
	m.Envelope.Ack = 3
	m.RetryCount, m.ClaimedBy = 2, "node-1"
	require.NoError(t, s.PutMessageRecord(ctx(), m))
	got, err := s.GetMessageRecord(ctx(), m.MessageID)
	require.NoError(t, err)
	EqualMessage(t, m, got)
	m2 := *m
	m2.Status = aacp.OutcomeFailed
	require.NoError(t, s.PutMessageRecord(ctx(), &m2))
	got, err = s.GetMessageRecord(ctx(), m.MessageID)
	require.NoError(t, err)
	EqualMessage(t, &m2, got)
}

func testEnqueue(t *testing.T, s aacp.Store) {
	r := Request("a", "b", base)
	m := Message(r, 1, base)
	require.NoError(t, s.Enqueue(ctx(), r, m, aacp.Fence{}))
	got, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	EqualRequest(t, r, got)
	gm, err := s.GetMessageRecord(ctx(), m.MessageID)
	require.NoError(t, err)
	EqualMessage(t, m, gm)
	last, err := s.GetLastSequence(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last)

	// The request id is claimed: a second Enqueue of it fails and stores
	// nothing (neither the message nor its seq), the record is kept.
	changed := *r
	changed.Payload = json.RawMessage(`"other"`)
	m2 := Message(r, 2, base.Add(time.Second))
	require.ErrorIs(t, s.Enqueue(ctx(), &changed, m2, aacp.Fence{}), aacp.ErrDuplicateRequest)
	got, err = s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	EqualRequest(t, r, got)
	_, err = s.GetMessageRecord(ctx(), m2.MessageID)
	require.ErrorIs(t, err, aacp.ErrNotFound)
	last, err = s.GetLastSequence(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last)

	// A message without a request record (a retransmission of r's).
	m3 := Message(r, 2, base)
	require.NoError(t, s.Enqueue(ctx(), nil, m3, aacp.Fence{}))
}

func testEnqueueSeqConflict(t *testing.T, s aacp.Store) {
	r := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r, Message(r, 5, base), aacp.Fence{}))
	for _, seq := range []uint64{5, 4} {
		r2 := Request("a", "b", base)
		m2 := Message(r2, seq, base)
		err := s.Enqueue(ctx(), r2, m2, aacp.Fence{})
		require.ErrorIs(t, err, aacp.ErrSeqConflict, "seq %d", seq)
		_, err = s.GetMessageRecord(ctx(), m2.MessageID)
		require.ErrorIs(t, err, aacp.ErrNotFound, "nothing stored")
		_, err = s.GetRequestRecord(ctx(), r2.RequestID)
		require.ErrorIs(t, err, aacp.ErrNotFound, "nothing stored")
	}
	// Other pairs are independent.
	r3 := Request("b", "a", base)
	require.NoError(t, s.Enqueue(ctx(), r3, Message(r3, 1, base), aacp.Fence{}))
}

func testResolve(t *testing.T, s aacp.Store) {
	_, err := s.Resolve(ctx(), &aacp.Resolution{RequestID: uuid(), Outcome: aacp.OutcomeCompleted}, nil, aacp.Fence{})
	require.ErrorIs(t, err, aacp.ErrNotFound)

	r := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r, Message(r, 1, base), aacp.Fence{}))
	res := &aacp.Resolution{RequestID: r.RequestID, Outcome: aacp.OutcomeCompleted, Completion: aacp.CompletionLateCompleted,
		Result: json.RawMessage(`{"ok":true}`), CompletedAt: base.Add(time.Second), Attempts: 2}
	applied, err := s.Resolve(ctx(), res, nil, aacp.Fence{})
	require.NoError(t, err)
	assert.True(t, applied)

	// The first resolution wins.
	applied, err = s.Resolve(ctx(), &aacp.Resolution{RequestID: r.RequestID, Outcome: aacp.OutcomeFailed,
		Error: &mcp.StructuredError{Code: mcp.ErrInternal, Message: "x"}}, nil, aacp.Fence{})
	require.NoError(t, err)
	assert.False(t, applied)

	got, err := s.GetRequestRecord(ctx(), r.RequestID)
	require.NoError(t, err)
	want := *r
	want.Status, want.Completion, want.Result, want.CompletedAt, want.Attempts = aacp.OutcomeCompleted,
		aacp.CompletionLateCompleted, res.Result, res.CompletedAt, 2
	EqualRequest(t, &want, got)
	gr := got.Resolution()
	assert.Equal(t, aacp.OutcomeCompleted, gr.Outcome)
	assert.NoError(t, gr.Err())
}

func testResolveWithResponse(t *testing.T, s aacp.Store) {
	r := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r, Message(r, 1, base), aacp.Fence{}))
	resp := Message(r, 1, base)
	resp.Envelope.SourceAgentID, resp.Envelope.TargetAgentID, resp.Envelope.MessageType = "b", "a", aacp.MessageResponse
	resp.Envelope.Payload = json.RawMessage(`{"outcome":"COMPLETED"}`)
	applied, err := s.Resolve(ctx(), &aacp.Resolution{RequestID: r.RequestID, Outcome: aacp.OutcomeCompleted,
		CompletedAt: base}, resp, aacp.Fence{})
	require.NoError(t, err)
	require.True(t, applied)
	gm, err := s.GetMessageRecord(ctx(), resp.MessageID)
	require.NoError(t, err)
	EqualMessage(t, resp, gm)
	last, err := s.GetLastSequence(ctx(), "b", "a")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last)

	// A response whose seq is taken: nothing is applied.
	r2 := Request("a", "b", base)
	require.NoError(t, s.Enqueue(ctx(), r2, Message(r2, 2, base), aacp.Fence{}))
	resp2 := Message(r2, 1, base)
	resp2.Envelope.SourceAgentID, resp2.Envelope.TargetAgentID, resp2.Envelope.MessageType = "b", "a", aacp.MessageResponse
	applied, err = s.Resolve(ctx(), &aacp.Resolution{RequestID: r2.RequestID, Outcome: aacp.OutcomeCompleted}, resp2, aacp.Fence{})
	require.ErrorIs(t, err, aacp.ErrSeqConflict)
	assert.False(t, applied)
	got, err := s.GetRequestRecord(ctx(), r2.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeUnknown, got.Status)
	_, err = s.GetMessageRecord(ctx(), resp2.MessageID)
	require.ErrorIs(t, err, aacp.ErrNotFound)
}

func testMark(t *testing.T, s aacp.Store) {
	r1, r2 := Request("a", "b", base), Request("a", "b", base)
	require.NoError(t, s.PutRequestRecord(ctx(), r1))
	require.NoError(t, s.PutRequestRecord(ctx(), r2))
	require.NoError(t, s.MarkCompleted(ctx(), r1.RequestID, aacp.OutcomeCompleted, "ref-1"))
	se := &mcp.StructuredError{Code: mcp.ErrTimeout, Message: "slow"}
	require.NoError(t, s.MarkFailed(ctx(), r2.RequestID, se))
	require.NoError(t, s.MarkFailed(ctx(), r1.RequestID, se), "a final request keeps its outcome")
	g1, err := s.GetRequestRecord(ctx(), r1.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeCompleted, g1.Status)
	assert.Equal(t, "ref-1", g1.CompletionRef)
	assert.Nil(t, g1.Error)
	g2, err := s.GetRequestRecord(ctx(), r2.RequestID)
	require.NoError(t, err)
	assert.Equal(t, aacp.OutcomeFailed, g2.Status)
	assert.Equal(t, se, g2.Error)
	require.ErrorIs(t, s.MarkCompleted(ctx(), uuid(), aacp.OutcomeCompleted, ""), aacp.ErrNotFound)
	require.Error(t, s.MarkCompleted(ctx(), r1.RequestID, aacp.OutcomeUnknown, ""))
}

func testSequences(t *testing.T, s aacp.Store) {
	for _, f := range []func(context.Context, string, string) (uint64, error){s.GetLastSequence, s.GetAck} {
		v, err := f(ctx(), "x", "y")
		require.NoError(t, err)
		assert.Zero(t, v)
	}
	require.NoError(t, s.UpdateLastSequence(ctx(), "x", "y", 10))
	require.NoError(t, s.UpdateLastSequence(ctx(), "x", "y", 4))
	v, err := s.GetLastSequence(ctx(), "x", "y")
	require.NoError(t, err)
	assert.Equal(t, uint64(10), v)
	v, err = s.GetLastSequence(ctx(), "y", "x")
	require.NoError(t, err)
	assert.Zero(t, v)
}

func testAcknowledge(t *testing.T, s aacp.Store) {
	var msgs []*aacp.MessageRecord
	for seq := uint64(1); seq <= 5; seq++ {
		r := Request("a", "b", base)
		m := Message(r, seq, base)
		require.NoError(t, s.Enqueue(ctx(), r, m, aacp.Fence{}))
		msgs = append(msgs, m)
	}
	other := Request("a", "c", base)
	require.NoError(t, s.Enqueue(ctx(), other, Message(other, 1, base), aacp.Fence{}))

	require.NoError(t, s.Acknowledge(ctx(), []aacp.Ack{{Source: "a", Target: "b", Seq: 3}}))
	require.NoError(t, s.Acknowledge(ctx(), []aacp.Ack{{Source: "a", Target: "b", Seq: 2}}), "a lower ack is ignored")
	ack, err := s.GetAck(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), ack)
	un, err := s.GetUnacknowledgedMessages(ctx(), "a", "b")
	require.NoError(t, err)
	require.Len(t, un, 2)
	assert.Equal(t, []uint64{4, 5}, []uint64{un[0].Seq, un[1].Seq})
	EqualEnvelope(t, &msgs[3].Envelope, un[0])
	for i, m := range msgs {
		got, err := s.GetMessageRecord(ctx(), m.MessageID)
		require.NoError(t, err)
		want := aacp.OutcomeUnknown
		if i < 3 {
			want = aacp.OutcomeCompleted
		}
		assert.Equal(t, want, got.Status, "seq %d", i+1)
	}
	un, err = s.GetUnacknowledgedMessages(ctx(), "a", "c")
	require.NoError(t, err)
	assert.Len(t, un, 1)
	un, err = s.GetUnacknowledgedMessages(ctx(), "nobody", "c")
	require.NoError(t, err)
	assert.Empty(t, un)
	// Several pairs at once, sequence counters untouched.
	require.NoError(t, s.Acknowledge(ctx(), []aacp.Ack{{Source: "a", Target: "c", Seq: 1}, {Source: "a", Target: "b", Seq: 5}}))
	un, err = s.GetUnacknowledgedMessages(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Empty(t, un)
	last, err := s.GetLastSequence(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(5), last)
}

func testListPending(t *testing.T, s aacp.Store) {
	var ids []string
	for i := 0; i < 4; i++ {
		r := Request("a", "b", base.Add(time.Duration(i)*time.Minute))
		require.NoError(t, s.PutRequestRecord(ctx(), r))
		ids = append(ids, r.RequestID)
	}
	require.NoError(t, s.MarkCompleted(ctx(), ids[1], aacp.OutcomeCompleted, ""))
	all, err := s.ListPendingRequests(ctx(), time.Time{})
	require.NoError(t, err)
	assert.Equal(t, []string{ids[0], ids[2], ids[3]}, requestIDs(all))
	older, err := s.ListPendingRequests(ctx(), base.Add(2*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{ids[0]}, requestIDs(older))
}

func requestIDs(rs []*aacp.RequestRecord) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.RequestID)
	}
	return out
}

func testListInState(t *testing.T, s aacp.Store) {
	var ms []*aacp.MessageRecord
	for i := 0; i < 4; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		r := Request("a", "b", at)
		m := Message(r, uint64(i+1), at)
		require.NoError(t, s.Enqueue(ctx(), r, m, aacp.Fence{}))
		ms = append(ms, m)
	}
	require.NoError(t, s.Acknowledge(ctx(), []aacp.Ack{{Source: "a", Target: "b", Seq: 1}}))
	failed := *ms[3]
	failed.Status = aacp.OutcomeFailed
	require.NoError(t, s.PutMessageRecord(ctx(), &failed))

	ids := func(ms []*aacp.MessageRecord) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.MessageID)
		}
		return out
	}
	got, err := s.ListMessagesInState(ctx(), aacp.OutcomeUnknown, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, []string{ms[1].MessageID, ms[2].MessageID}, ids(got))
	got, err = s.ListMessagesInState(ctx(), aacp.OutcomeUnknown, base.Add(2*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{ms[1].MessageID}, ids(got))
	got, err = s.ListMessagesInState(ctx(), aacp.OutcomeCompleted, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, []string{ms[0].MessageID}, ids(got))
	got, err = s.ListMessagesInState(ctx(), aacp.OutcomeFailed, time.Time{})
	require.NoError(t, err)
	assert.Equal(t, []string{ms[3].MessageID}, ids(got))
}

func testPurge(t *testing.T, s aacp.Store) {
	keep := Request("a", "b", base)
	keep.ExpiresAt = time.Time{} // never
	require.NoError(t, s.Enqueue(ctx(), keep, Message(keep, 1, base), aacp.Fence{}))
	var expired []*aacp.RequestRecord
	for i := 0; i < 3; i++ {
		r := Request("a", "b", base)
		r.ExpiresAt = base.Add(time.Duration(i) * time.Minute) // base, +1m, +2m
		m := Message(r, uint64(i+2), base)
		m.ExpiresAt = r.ExpiresAt
		require.NoError(t, s.Enqueue(ctx(), r, m, aacp.Fence{}))
		expired = append(expired, r)
	}
	n, err := s.PurgeExpired(ctx(), base.Add(-time.Second))
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = s.PurgeExpired(ctx(), base.Add(time.Minute)) // expiresAt <= now
	require.NoError(t, err)
	assert.Equal(t, 4, n, "two requests and their two messages")
	for i, r := range expired {
		_, err := s.GetRequestRecord(ctx(), r.RequestID)
		if i < 2 {
			require.ErrorIs(t, err, aacp.ErrNotFound)
		} else {
			require.NoError(t, err)
		}
	}
	n, err = s.PurgeExpired(ctx(), base.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 3, n, "the third request and the messages with the default expiry")
	_, err = s.GetRequestRecord(ctx(), keep.RequestID)
	require.NoError(t, err, "a record without ExpiresAt is kept")
	last, err := s.GetLastSequence(ctx(), "a", "b")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), last, "sequences survive the purge")
}

func testClaimDue(t *testing.T, s aacp.Store) {
	now := base.Add(time.Minute)
	var due []*aacp.MessageRecord
	mk := func(source, target string, seq uint64, next time.Time) *aacp.MessageRecord {
		r := Request(source, target, base)
		m := Message(r, seq, base)
		m.NextRetryAt = next
		require.NoError(t, s.Enqueue(ctx(), r, m, aacp.Fence{}))
		return m
	}
	mk("c", "b", 1, base) // acknowledged below
	due = append(due, mk("a", "b", 1, base), mk("a", "b", 2, now), mk("c", "b", 2, base.Add(time.Second)))
	later := mk("a", "b", 3, now.Add(time.Second))
	mk("a", "x", 1, base) // another target
	require.NoError(t, s.Acknowledge(ctx(), []aacp.Ack{{Source: "c", Target: "b", Seq: 1}}))

	q := aacp.ClaimQuery{Owner: "n1", Targets: []string{"b"}, Now: now, Limit: 10,
		Backoff: func(n int) time.Duration { return time.Duration(n) * time.Minute }}
	got, err := s.ClaimDue(ctx(), q)
	require.NoError(t, err)
	require.Len(t, got, 3)
	// Most overdue first.
	assert.Equal(t, []string{due[0].MessageID, due[2].MessageID, due[1].MessageID},
		[]string{got[0].MessageID, got[1].MessageID, got[2].MessageID})
	for _, m := range got {
		assert.Equal(t, 1, m.RetryCount)
		assert.Equal(t, "n1", m.ClaimedBy)
		equalTime(t, now.Add(time.Minute), m.NextRetryAt, "NextRetryAt")
		stored, err := s.GetMessageRecord(ctx(), m.MessageID)
		require.NoError(t, err)
		EqualMessage(t, m, stored)
	}
	// Claimed messages are not due again until their new NextRetryAt.
	got, err = s.ClaimDue(ctx(), q)
	require.NoError(t, err)
	assert.Empty(t, got)

	q.Now = now.Add(time.Minute)
	q.Limit = 2
	got, err = s.ClaimDue(ctx(), q)
	require.NoError(t, err)
	require.Len(t, got, 2, "limit")
	assert.Equal(t, later.MessageID, got[0].MessageID, "the most overdue first")
	assert.Equal(t, 2, got[1].RetryCount)

	q.IgnoreSchedule, q.Limit, q.Owner = true, 0, "n2"
	got, err = s.ClaimDue(ctx(), q)
	require.NoError(t, err)
	assert.Len(t, got, 4, "every unacknowledged message, whatever its schedule")
	for _, m := range got {
		assert.Equal(t, "n2", m.ClaimedBy)
	}

	got, err = s.ClaimDue(ctx(), aacp.ClaimQuery{Owner: "n1", Targets: []string{"nobody"}, Now: now})
	require.NoError(t, err)
	assert.Empty(t, got)
}

// testClaimConcurrent claims from several goroutines at once: every
// message is claimed exactly once.
func testClaimConcurrent(t *testing.T, s aacp.Store) {
	const total = 60
	for i := 0; i < total; i++ {
		r := Request(fmt.Sprintf("s%d", i%3), "t", base)
		require.NoError(t, s.Enqueue(ctx(), r, Message(r, uint64(i/3+1), base), aacp.Fence{}))
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for {
				got, err := s.ClaimDue(ctx(), aacp.ClaimQuery{Owner: owner, Targets: []string{"t"}, Now: base, Limit: 7,
					Backoff: func(int) time.Duration { return time.Hour }})
				if !assert.NoError(t, err) || len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					if prev, ok := seen[m.MessageID]; ok {
						t.Errorf("message %s claimed by %s and %s", m.MessageID, prev, owner)
					}
					seen[m.MessageID] = owner
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	assert.Len(t, seen, total)
}

// testEnqueueConcurrent: goroutines allocate seqs for one pair the way a
// Node does across processes (read the last seq, try it, reload on
// conflict); no seq is stored twice and none is lost.
func testEnqueueConcurrent(t *testing.T, s aacp.Store) {
	const perWorker, workers = 15, 3
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				for {
					last, err := s.GetLastSequence(ctx(), "p", "q")
					if !assert.NoError(t, err) {
						return
					}
					r := Request("p", "q", base)
					err = s.Enqueue(ctx(), r, Message(r, last+1, base), aacp.Fence{})
					if err == nil {
						break
					}
					if !errors.Is(err, aacp.ErrSeqConflict) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	un, err := s.GetUnacknowledgedMessages(ctx(), "p", "q")
	require.NoError(t, err)
	var seqs []int
	for _, e := range un {
		seqs = append(seqs, int(e.Seq))
	}
	sort.Ints(seqs)
	want := make([]int, perWorker*workers)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, seqs)
}
