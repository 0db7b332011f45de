package aacp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

var bg = context.Background()

func TestSendRequestRoundTrip(t *testing.T) {
	var c counter
	n, st, _ := manualNode(t, echoMux(&c), nil)
	for i := 1; i <= 3; i++ {
		res, err := n.SendRequest(bg, "client", "echo", map[string]int{"i": i})
		require.NoError(t, err)
		assert.JSONEq(t, `{"i":`+string(rune('0'+i))+`}`, string(res))
	}
	assert.Equal(t, 3, c.total())

	// The ledger: every request COMPLETED (success), every message
	// acknowledged once the acks are flushed.
	pending, err := st.ListPendingRequests(bg, time.Time{})
	require.NoError(t, err)
	assert.Empty(t, pending)
	poll(t, n)
	unacked, err := st.ListMessagesInState(bg, OutcomeUnknown, time.Time{})
	require.NoError(t, err)
	assert.Empty(t, unacked)
	delivered, err := st.ListMessagesInState(bg, OutcomeCompleted, time.Time{})
	require.NoError(t, err)
	assert.Len(t, delivered, 6, "3 requests and 3 responses")
	for _, m := range delivered {
		require.NoError(t, m.Envelope.Validate())
		if m.Envelope.MessageType == MessageRequest {
			rec, err := st.GetRequestRecord(bg, m.RequestID)
			require.NoError(t, err)
			assert.Equal(t, OutcomeCompleted, rec.Status)
			assert.Equal(t, CompletionSuccess, rec.Completion)
			assert.Equal(t, 1, rec.Attempts)
			st, err := n.Status(bg, m.MessageID)
			require.NoError(t, err)
			assert.Equal(t, OutcomeCompleted, st.Outcome)
			assert.True(t, st.Delivered)
		}
	}

	// Sequences and acknowledgments on both sides.
	s, err := n.Session(bg, "client", "echo")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), s.NextSeq)
	assert.Equal(t, uint64(2), s.LastAck, "piggybacked on the last response: requests 1-2 acked before it")
	w, err := n.Window(bg, "client", "echo")
	require.NoError(t, err)
	assert.Equal(t, WindowInfo{Source: "client", Target: "echo", Ack: 3}, w)
	w, err = n.Window(bg, "echo", "client")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), w.Ack)
	for _, pair := range [][2]string{{"client", "echo"}, {"echo", "client"}} {
		ack, err := st.GetAck(bg, pair[0], pair[1])
		require.NoError(t, err)
		assert.Equal(t, uint64(3), ack, "%v", pair)
	}
}

func TestSendRequestDefaultSourceIsNode(t *testing.T) {
	n, st, _ := manualNode(t, echoMux(nil), &Options{ID: "node-a"})
	_, err := n.SendRequest(bg, "", "echo", 1)
	require.NoError(t, err)
	last, err := st.GetLastSequence(bg, "node-a", "echo")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), last)
}

func TestSendRequestValidation(t *testing.T) {
	n, _, _ := manualNode(t, echoMux(nil), nil)
	_, err := n.SendRequest(bg, "client", "", 1)
	assert.ErrorContains(t, err, "target agent id")
	_, err = n.SendRequest(bg, "bad\x01id", "echo", 1)
	assert.ErrorContains(t, err, "source agent id")
	_, err = n.SendRequest(bg, "client", "echo", jsontext.Value(`{"a":1,"a":2}`))
	assert.ErrorContains(t, err, "payload")
	_, err = n.SendRequest(bg, "client", "echo", func() {})
	assert.ErrorContains(t, err, "payload")
	_, err = n.SendRequest(bg, "client", "echo", 1, WithRequestID("not-a-uuid"))
	assert.ErrorContains(t, err, "UUID v4")
}

func TestFailedRequestNotRetried(t *testing.T) {
	var c counter
	m := NewMux()
	m.HandleFunc("strict", func(_ context.Context, env *Envelope) (any, error) {
		c.add(env.RequestID)
		return nil, &mcp.StructuredError{Code: mcp.ErrInvalidArgument, Message: "no"}
	})
	n, st, _ := manualNode(t, m, nil)
	_, err := n.SendRequest(bg, "client", "strict", 1)
	var fe *FailedError
	require.ErrorAs(t, err, &fe)
	assert.ErrorIs(t, err, ErrFailed)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.Equal(t, CompletionToolError, fe.Completion)
	assert.Equal(t, 1, c.total(), "INVALID_ARGUMENT is not retried")
	rec, err := st.GetRequestRecord(bg, fe.RequestID)
	require.NoError(t, err)
	assert.Equal(t, OutcomeFailed, rec.Status)
	assert.Equal(t, se, rec.Error)
}

func TestPanickingHandler(t *testing.T) {
	m := NewMux()
	m.HandleFunc("boom", func(context.Context, *Envelope) (any, error) { panic("kaboom") })
	n, _, _ := manualNode(t, m, nil)
	_, err := n.SendRequest(bg, "client", "boom", 1)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.Contains(t, se.Message, "kaboom")
}

// Retries follow the policy: exponential backoff (jitter off here), up to
// MaxAttempts, only for errors ShouldRetry accepts; the attempts are
// recorded in the ledger.
func TestRetryWithBackoff(t *testing.T) {
	var calls atomic.Int32
	failures := int32(2)
	m := NewMux()
	m.HandleFunc("flaky", func(_ context.Context, env *Envelope) (any, error) {
		if calls.Add(1) <= failures {
			return nil, &mcp.StructuredError{Code: CodeUnavailable, Message: "try later"}
		}
		return "ok", nil
	})
	policy := RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Multiplier: 2}
	n, st, clock := manualNode(t, m, &Options{Retry: &policy})

	id, err := n.Submit(bg, "client", "flaky", 1)
	require.NoError(t, err)
	n.bg.Wait()
	require.Equal(t, int32(1), calls.Load())
	rec, err := st.GetRequestRecord(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeUnknown, rec.Status, "pending while retried")
	assert.Equal(t, 1, rec.Attempts)
	assert.Equal(t, CodeUnavailable, rec.Error.Code, "the last attempt's error")

	steps := []struct {
		advance time.Duration
		calls   int32
	}{
		{99 * time.Millisecond, 1}, // first backoff: 100ms
		{time.Millisecond, 2},
		{199 * time.Millisecond, 2}, // second: 200ms
		{time.Millisecond, 3},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		poll(t, n)
		require.Equal(t, s.calls, calls.Load(), "step %d", i)
	}
	res, err := n.Await(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, res.Outcome)
	assert.Equal(t, CompletionSuccess, res.Completion)
	assert.Equal(t, 3, res.Attempts)
	assert.JSONEq(t, `"ok"`, string(res.Result))

	// Always failing: MaxAttempts attempts, then FAILED.
	calls.Store(0)
	failures = 100
	id, err = n.Submit(bg, "client", "flaky", 2)
	require.NoError(t, err)
	n.bg.Wait()
	for i := 0; i < 10; i++ {
		clock.Advance(time.Second)
		poll(t, n)
	}
	assert.Equal(t, int32(5), calls.Load())
	res, err = n.Await(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Equal(t, CompletionToolError, res.Completion)
	assert.Equal(t, 5, res.Attempts)
	assert.ErrorIs(t, res.Err(), ErrFailed)
}

func TestRetryPolicyBackoff(t *testing.T) {
	p := RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Multiplier: 3, Jitter: 0.5}
	tests := []struct {
		attempt int
		r       float64
		want    time.Duration
	}{
		{1, 0, 100 * time.Millisecond},
		{2, 0, 300 * time.Millisecond},
		{3, 0, 900 * time.Millisecond},
		{4, 0, time.Second}, // capped
		{60, 0, time.Second},
		{1, 1, 50 * time.Millisecond}, // jitter shortens by up to half
		{3, 0.5, 675 * time.Millisecond},
		{0, 0, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, p.Backoff(tt.attempt, tt.r), "attempt %d r %v", tt.attempt, tt.r)
	}
	d := RetryPolicy{}.withDefaults()
	assert.Equal(t, 5, d.MaxAttempts)
	assert.NotNil(t, d.ShouldRetry)
	assert.True(t, DefaultShouldRetry(&mcp.StructuredError{Code: mcp.ErrTimeout}))
	assert.True(t, DefaultShouldRetry(&mcp.StructuredError{Code: CodeUnavailable}))
	assert.False(t, DefaultShouldRetry(&mcp.StructuredError{Code: mcp.ErrInternal}))
	assert.False(t, DefaultShouldRetry(nil))
}

// A request id given by the caller makes SendRequest idempotent: the
// handler runs once, a second call returns the cached result.
func TestDedupByRequestID(t *testing.T) {
	var c counter
	n, _, _ := manualNode(t, echoMux(&c), nil)
	id := newUUID()
	r1, err := n.SendRequest(bg, "client", "echo", 1, WithRequestID(id))
	require.NoError(t, err)
	r2, err := n.SendRequest(bg, "client", "echo", 2, WithRequestID(id))
	require.NoError(t, err)
	assert.JSONEq(t, "1", string(r1))
	assert.JSONEq(t, "1", string(r2), "the cached result, not a new execution")
	assert.Equal(t, 1, c.get(id))
}

// Receiver-side dedup: a REQUEST that arrives again with a new messageId
// and seq (a retry by its sender) for a request already COMPLETED is not
// executed; its duplicate messageId is ignored.
func TestReceiverDedup(t *testing.T) {
	var c counter
	n, st, _ := manualNode(t, echoMux(&c), nil)
	_, err := n.SendRequest(bg, "client", "echo", "x")
	require.NoError(t, err)
	msgs, err := st.ListMessagesInState(bg, OutcomeUnknown, time.Time{})
	require.NoError(t, err)
	var req *Envelope
	for _, m := range msgs {
		if m.Envelope.MessageType == MessageRequest {
			req = &m.Envelope
		}
	}
	require.NotNil(t, req)

	// The same envelope again (duplicate messageId): ignored.
	n.receive(bg, req, nil, false)
	n.bg.Wait()
	// A retry: same requestId, new messageId and seq.
	retry := *req
	retry.MessageID, retry.Seq = newUUID(), 2
	require.NoError(t, st.UpdateLastSequence(bg, "client", "echo", 2))
	n.receive(bg, &retry, nil, false)
	n.bg.Wait()
	assert.Equal(t, 1, c.get(req.RequestID), "executed once")
	w, err := n.Window(bg, "client", "echo")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), w.Ack, "the retry's seq counts as received")
}

func TestWindow(t *testing.T) {
	w := &window{limit: 3, loaded: true}
	steps := []struct {
		seq    uint64
		ack    uint64
		gaps   []uint64
		dirty  bool
		before bool // seen before marking
	}{
		{1, 1, nil, true, false},
		{3, 1, []uint64{2}, false, false}, // a gap holds ack back
		{5, 1, []uint64{2, 4}, false, false},
		{3, 1, []uint64{2, 4}, false, true}, // duplicate above the gap
		{2, 3, []uint64{4}, true, false},    // the gap filled: ack jumps
		{1, 3, []uint64{4}, true, true},     // duplicate below ack: ack repeated
		{4, 5, nil, true, false},
	}
	for i, s := range steps {
		w.dirty = false
		assert.Equal(t, s.before, w.seen(s.seq), "step %d seen", i)
		w.mark(s.seq)
		assert.Equal(t, s.ack, w.ack, "step %d ack", i)
		assert.Equal(t, s.gaps, w.gaps(10), "step %d gaps", i)
		assert.Equal(t, s.dirty, w.dirty, "step %d dirty", i)
	}
	// The bound of out-of-order seqs.
	for _, seq := range []uint64{7, 8, 9} {
		require.True(t, w.fits(seq))
		w.mark(seq)
	}
	assert.False(t, w.fits(10), "3 buffered")
	assert.True(t, w.fits(6), "the next expected seq always fits")
	w.mark(6)
	assert.Equal(t, uint64(9), w.ack)
	// skipTo drops an unfillable gap.
	w.mark(12)
	w.skipTo(10)
	assert.Equal(t, uint64(10), w.ack)
	w.mark(11)
	assert.Equal(t, uint64(12), w.ack)
}

// Deliveries through a link that drops, duplicates and reorders (seeded, so
// deterministic): gaps hold the cumulative ack back, the ledger's
// redeliveries fill them, duplicates are ignored, and every request runs
// exactly once.
func TestLossyLinkSeqAckGaps(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run("seed"+string(rune('0'+seed)), func(t *testing.T) {
			var c counter
			n, st, clock := manualNode(t, echoMux(&c), &Options{RetransmitTimeout: time.Second})
			link := newLossyLink(n, seed, 0.2, 0.15, 0.2)
			const total = 150
			ids := make([]string, total)
			sawGap := false
			for i := range ids {
				id, err := n.Submit(bg, "client", "echo", i)
				require.NoError(t, err)
				ids[i] = id
				if i%10 == 9 {
					n.bg.Wait()
					w, err := n.Window(bg, "client", "echo")
					require.NoError(t, err)
					if len(w.Gaps) > 0 {
						sawGap = true
						// The invariant: ack stops below the first missing seq.
						assert.Less(t, w.Ack, w.Gaps[0])
					}
				}
			}
			n.bg.Wait()
			assert.True(t, sawGap, "the link made gaps: %+v", link.stats)
			link.flush(bg)
			// Redelivery from the ledger fills what was dropped.
			for round := 0; round < 10; round++ {
				clock.Advance(2 * time.Second)
				poll(t, n)
				if w, _ := n.Window(bg, "client", "echo"); w.Ack == total {
					break
				}
			}
			poll(t, n) // flush the last acks
			w, err := n.Window(bg, "client", "echo")
			require.NoError(t, err)
			assert.Equal(t, WindowInfo{Source: "client", Target: "echo", Ack: total}, w)
			for i, id := range ids {
				rec, err := st.GetRequestRecord(bg, id)
				require.NoError(t, err)
				require.Equal(t, OutcomeCompleted, rec.Status, "request %d", i)
				require.Equal(t, 1, c.get(id), "request %d ran once", i)
			}
			un, err := st.GetUnacknowledgedMessages(bg, "client", "echo")
			require.NoError(t, err)
			assert.Empty(t, un)
			ack, err := st.GetAck(bg, "client", "echo")
			require.NoError(t, err)
			assert.Equal(t, uint64(total), ack)
			t.Logf("link %+v", link.stats)
			assert.Positive(t, link.stats.dropped)
			assert.Positive(t, link.stats.duplicated)
			assert.Positive(t, link.stats.reordered)
		})
	}
}

// A caller that stops waiting gets UNKNOWN; the handler's late result is
// recorded (late_completed) and Await finds it.
func TestTimeoutUnknownThenLateCompletion(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	m := NewMux()
	m.HandleFunc("slow", func(ctx context.Context, env *Envelope) (any, error) {
		close(started)
		<-release // ignores its context, as a handler may
		return "late result", nil
	})
	n, st, _ := manualNode(t, m, nil)
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	defer cancel()
	id, err := n.Submit(ctx, "client", "slow", 1)
	require.NoError(t, err)
	<-started
	_, err = n.Await(ctx, id)
	var ue *UnknownOutcomeError
	require.ErrorAs(t, err, &ue)
	assert.ErrorIs(t, err, ErrUnknownOutcome)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, id, ue.RequestID)
	rec, err := st.GetRequestRecord(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeUnknown, rec.Status)

	close(release)
	res, err := n.Await(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, res.Outcome)
	assert.Equal(t, CompletionLateCompleted, res.Completion)
	assert.JSONEq(t, `"late result"`, string(res.Result))
}

// A handler that gives up because of its deadline: timeout (FAILED), with
// retries off.
func TestHandlerTimeout(t *testing.T) {
	m := NewMux()
	m.HandleFunc("slow", func(ctx context.Context, env *Envelope) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	policy := RetryPolicy{MaxAttempts: 1}
	n, _, _ := manualNode(t, m, &Options{Retry: &policy})
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	id, err := n.Submit(ctx, "client", "slow", 1)
	require.NoError(t, err)
	n.bg.Wait()
	res, err := n.Await(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Equal(t, CompletionTimeout, res.Completion)
	assert.Equal(t, mcp.ErrTimeout, res.Error.Code)
}

// A caller that disconnects (cancels) while its handler runs inline: the
// handler's context is cancelled; returning normally is
// disconnected_completed, returning the cancellation is aborted.
func TestDisconnectOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		obey   bool
		want   Completion
		status Outcome
	}{
		{"handler completes anyway", false, CompletionDisconnectedCompleted, OutcomeCompleted},
		{"handler aborts", true, CompletionAborted, OutcomeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg)
			m := NewMux()
			m.HandleFunc("worker", func(hctx context.Context, env *Envelope) (any, error) {
				cancel() // the caller goes away while we run
				if tt.obey {
					<-hctx.Done()
					return nil, hctx.Err()
				}
				return "done", nil
			})
			n, st, _ := manualNode(t, m, nil)
			_, err := n.SendRequest(ctx, "client", "worker", 1)
			if tt.status == OutcomeCompleted {
				require.NoError(t, err, "the result was there when the caller looked")
			} else {
				var fe *FailedError
				require.ErrorAs(t, err, &fe)
				assert.Equal(t, CodeAborted, fe.Err.Code)
			}
			all, err := st.ListMessagesInState(bg, OutcomeUnknown, time.Time{})
			require.NoError(t, err)
			for _, m := range all {
				if m.Envelope.MessageType == MessageRequest {
					rec, err := st.GetRequestRecord(bg, m.RequestID)
					require.NoError(t, err)
					assert.Equal(t, tt.status, rec.Status)
					assert.Equal(t, tt.want, rec.Completion)
				}
			}
		})
	}
}

// SendReliable: an EVENT processed once, its outcome in the ledger, no
// RESPONSE.
func TestSendReliableEvent(t *testing.T) {
	var c counter
	var received, completed atomic.Int32
	n, st, _ := manualNode(t, echoMux(&c), &Options{
		OnMessageReceived:  func(*Envelope) { received.Add(1) },
		OnMessageCompleted: func(*Envelope, *Resolution) { completed.Add(1) },
	})
	id, err := n.SendReliable(bg, "client", "echo", map[string]string{"event": "x"})
	require.NoError(t, err)
	n.bg.Wait()
	st1, err := n.Status(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, st1.Outcome)
	assert.Equal(t, CompletionSuccess, st1.Completion)
	m, err := st.GetMessageRecord(bg, id)
	require.NoError(t, err)
	assert.Equal(t, MessageEvent, m.Envelope.MessageType)
	assert.True(t, IsUUIDv4(m.RequestID), "events get a requestId for dedup")
	// Delivered again (as after a crash): not processed again.
	n.receive(bg, &m.Envelope, nil, false)
	retry := m.Envelope
	retry.MessageID, retry.Seq = newUUID(), 2
	n.receive(bg, &retry, nil, false)
	n.bg.Wait()
	assert.Equal(t, 1, c.total())
	assert.Equal(t, int32(1), received.Load())
	assert.Equal(t, int32(1), completed.Load())
	last, err := st.GetLastSequence(bg, "echo", "client")
	require.NoError(t, err)
	assert.Zero(t, last, "no RESPONSE for an EVENT")
	_, err = n.Status(bg, newUUID())
	assert.ErrorIs(t, err, ErrNotFound)
}

// expiresAt: the default TTL, per-message TTLs, purging by Poll and by
// PurgeExpired.
func TestTTLAndPurge(t *testing.T) {
	n, st, clock := manualNode(t, echoMux(nil), &Options{DefaultTTL: time.Hour, PurgeInterval: time.Minute})
	start := clock.Now()
	_, err := n.SendRequest(bg, "client", "echo", 1)
	require.NoError(t, err)
	short, err := n.Submit(bg, "client", "echo", 2, WithTTL(time.Minute))
	require.NoError(t, err)
	fixed, err := n.Submit(bg, "client", "echo", 3, WithExpiresAt(start.Add(10*time.Hour)))
	require.NoError(t, err)
	n.bg.Wait()
	rec, err := st.GetRequestRecord(bg, short)
	require.NoError(t, err)
	assert.Equal(t, start.Add(time.Minute), rec.ExpiresAt)
	rec, err = st.GetRequestRecord(bg, fixed)
	require.NoError(t, err)
	assert.Equal(t, start.Add(10*time.Hour), rec.ExpiresAt)
	for _, m := range mustMessages(t, st) {
		assert.False(t, m.ExpiresAt.IsZero(), "every record has an expiry")
	}
	reqs, msgs := st.Len()
	assert.Equal(t, 3, reqs)
	assert.Equal(t, 6, msgs, "3 requests and their responses")

	// Poll purges every PurgeInterval: the short request and its messages
	// (a response expires with its request) are gone.
	clock.Advance(2 * time.Minute)
	poll(t, n)
	_, err = st.GetRequestRecord(bg, short)
	assert.ErrorIs(t, err, ErrNotFound)
	reqs, msgs = st.Len()
	assert.Equal(t, 2, reqs)
	assert.Equal(t, 4, msgs)

	k, err := n.PurgeExpired(bg, start.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 3, k, "the first request (default TTL) and its messages")
	k, err = n.PurgeExpired(bg, start.Add(10*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 3, k)
	reqs, msgs = st.Len()
	assert.Zero(t, reqs+msgs)
}

func mustMessages(t *testing.T, st Store) []*MessageRecord {
	t.Helper()
	var all []*MessageRecord
	for _, o := range []Outcome{OutcomeUnknown, OutcomeCompleted, OutcomeFailed} {
		ms, err := st.ListMessagesInState(bg, o, time.Time{})
		require.NoError(t, err)
		all = append(all, ms...)
	}
	return all
}

// Recovery after a restart (a second node on the same ledger): pending
// requests run again, completed ones never do, unacknowledged messages are
// redelivered, and callers find every outcome with Await.
func TestRecoverAfterRestart(t *testing.T) {
	st := NewMemoryStore()
	clock := newFakeClock()
	block := make(chan struct{})
	var first counter
	m1 := NewMux()
	m1.HandleFunc("echo", func(ctx context.Context, env *Envelope) (any, error) {
		if first.add(env.RequestID); env.Payload[0] == '9' {
			<-block // still running when the process "dies"
		}
		return env.Payload, nil
	})
	opts := &Options{Clock: clock, PollInterval: -1, Logger: quietLogger, Rand: func() float64 { return 0 }}
	n1 := New(st, m1, opts)
	require.NoError(t, n1.Start(bg))
	done, err := n1.Submit(bg, "client", "echo", 1)
	require.NoError(t, err)
	n1.bg.Wait()
	stuck, err := n1.Submit(bg, "client", "echo", 9)
	require.NoError(t, err)
	// The node dies: its goroutine stays blocked, nothing more is recorded.

	var second counter
	m2 := echoMux(&second)
	n2 := New(st, m2, opts)
	require.NoError(t, n2.Start(bg))
	assert.False(t, n2.Owns("echo"), "n1's lease has not expired yet")
	n2.bg.Wait()
	assert.Zero(t, second.total(), "nothing runs on a node that does not own the agent")
	clock.Advance(DefaultLeaseTTL) // n1 does not renew: its lease expires
	poll(t, n2)                    // takes the agent over and recovers it
	assert.True(t, n2.Owns("echo"))
	res, err := n2.Await(bg, stuck)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, res.Outcome)
	assert.JSONEq(t, "9", string(res.Result))
	assert.Equal(t, 1, second.get(stuck), "the pending request ran again")
	assert.Zero(t, second.get(done), "the completed one did not")
	res, err = n2.Await(bg, done)
	require.NoError(t, err)
	assert.JSONEq(t, "1", string(res.Result))
	pending, err := st.ListPendingRequests(bg, time.Time{})
	require.NoError(t, err)
	assert.Empty(t, pending)
	close(block)
	n1.bg.Wait() // the old handler finishes: its late result loses to the recorded one
	rec, err := st.GetRequestRecord(bg, stuck)
	require.NoError(t, err)
	assert.Equal(t, 1, rec.Attempts)
	require.NoError(t, n2.Close(bg))
	require.NoError(t, n1.Close(bg))
}

// Two nodes on one ledger (as two processes would be), each hosting one
// agent: requests and responses travel through the ledger by polling.
func TestTwoNodesSharedLedger(t *testing.T) {
	st := NewMemoryStore()
	mk := func(id, agent string) *Node {
		m := NewMux()
		m.HandleFunc(agent, func(_ context.Context, env *Envelope) (any, error) {
			return map[string]string{"from": agent, "got": string(env.Payload)}, nil
		})
		n := New(st, m, &Options{ID: id, PollInterval: 2 * time.Millisecond, Logger: quietLogger})
		require.NoError(t, n.Start(bg))
		t.Cleanup(func() { n.Close(bg) })
		return n
	}
	a, b := mk("node-a", "alpha"), mk("node-b", "beta")
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	res, err := a.SendRequest(ctx, "alpha", "beta", 1)
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"beta","got":"1"}`, string(res))
	res, err = b.SendRequest(ctx, "beta", "alpha", 2)
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"alpha","got":"2"}`, string(res))
	// A caller that is not an agent of its node: its responses are claimed
	// while it waits.
	res, err = a.SendRequest(ctx, "", "beta", 3)
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"beta","got":"3"}`, string(res))
}

func TestClosedNode(t *testing.T) {
	n, _, _ := manualNode(t, echoMux(nil), &Options{AllowUnknownTargets: true})
	// A caller waiting for a request nobody serves learns UNKNOWN at Close.
	errc := make(chan error, 1)
	go func() {
		_, err := n.SendRequest(bg, "client", "nobody", 1)
		errc <- err
	}()
	require.Eventually(t, func() bool {
		n.cmu.Lock()
		defer n.cmu.Unlock()
		return len(n.calls) == 1
	}, time.Second, time.Millisecond)
	require.NoError(t, n.Close(bg))
	err := <-errc
	assert.ErrorIs(t, err, ErrUnknownOutcome)
	assert.ErrorContains(t, err, "closed")
	require.NoError(t, n.Close(bg))
	_, err = n.SendRequest(bg, "client", "echo", 1)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = n.Poll(bg)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, n.Start(bg), ErrClosed)
}

// refusingEndpoint hosts "ghost", whose messages are never accepted.
// It accepts them once accept is set, and refuses them as undeliverable
// with undeliverable.
type refusingEndpoint struct {
	tries         atomic.Int32
	accept        atomic.Bool
	undeliverable bool
}

func (e *refusingEndpoint) Hosts(id string) bool { return id == "ghost" }
func (e *refusingEndpoint) Agents() []string     { return []string{"ghost"} }
func (e *refusingEndpoint) Dispatch(_ context.Context, _ *Envelope, done DoneFunc) error {
	e.tries.Add(1)
	switch {
	case e.undeliverable:
		return fmt.Errorf("%w: no route", ErrUndeliverable)
	case e.accept.Load():
		done("ok", nil)
		return nil
	}
	return errors.New("queue full")
}

// A message its agent refuses (back-pressure: the handler never saw it) is
// redelivered with backoff and never fails for it, however often; once the
// agent accepts it, it runs once.
func TestRefusedMessageIsDeferredNotFailed(t *testing.T) {
	ep := &refusingEndpoint{}
	clock := newFakeClock()
	policy := RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second}
	n := New(NewMemoryStore(), ep, &Options{Clock: clock, PollInterval: -1, Retry: &policy,
		RetransmitTimeout: time.Second, Logger: quietLogger, Rand: func() float64 { return 0 }})
	require.NoError(t, n.Start(bg))
	defer n.Close(bg)
	id, err := n.Submit(bg, "client", "ghost", 1)
	require.NoError(t, err)
	n.bg.Wait()
	for i := 0; i < 10; i++ {
		clock.Advance(time.Minute)
		poll(t, n)
	}
	assert.Equal(t, int32(11), ep.tries.Load(), "the first delivery and one redelivery per due poll")
	rec, err := n.Store().GetRequestRecord(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeUnknown, rec.Status, "refusals are back-pressure: the request is still pending")

	ep.accept.Store(true)
	clock.Advance(time.Minute)
	poll(t, n)
	res, err := n.Await(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, res.Outcome)
	assert.Equal(t, 1, res.Attempts)
}

// A message its Endpoint reports undeliverable (ErrUndeliverable: a reason
// the sender can act on) fails at once with protocol_error.
func TestUndeliverableMessageFails(t *testing.T) {
	ep := &refusingEndpoint{undeliverable: true}
	n := New(NewMemoryStore(), ep, &Options{PollInterval: -1, Logger: quietLogger})
	require.NoError(t, n.Start(bg))
	defer n.Close(bg)
	id, err := n.Submit(bg, "client", "ghost", 1)
	require.NoError(t, err)
	n.bg.Wait()
	res, err := n.Await(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Equal(t, CompletionProtocolError, res.Completion)
	assert.Equal(t, CodeProtocol, res.Error.Code)
	assert.Equal(t, int32(1), ep.tries.Load())
}
