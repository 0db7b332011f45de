package aacp

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// failingStore fails a request from outside (MarkFailed, as an operator
// would) at the moment the node next looks at it or records its retry,
// once armed: the external write lands between a failed attempt and the
// retry's record.
type failingStore struct {
	Store
	armed atomic.Bool
	se    *mcp.StructuredError
}

func (s *failingStore) GetRequestRecord(ctx context.Context, id string) (*RequestRecord, error) {
	rec, err := s.Store.GetRequestRecord(ctx, id)
	if s.armed.CompareAndSwap(true, false) {
		_ = s.Store.MarkFailed(ctx, id, s.se) // just after the read
	}
	return rec, err
}

func (s *failingStore) UpdateRetry(ctx context.Context, u *RetryUpdate) (bool, error) {
	if s.armed.CompareAndSwap(true, false) {
		_ = s.Store.MarkFailed(ctx, u.RequestID, s.se) // just before the update
	}
	return s.Store.UpdateRetry(ctx, u)
}

// A retry never overwrites a final state: a request failed from outside
// between a failed attempt and its retry stays FAILED with the external
// error, and its handler does not run again.
func TestRetryRacingExternalMarkFailed(t *testing.T) {
	external := &mcp.StructuredError{Code: mcp.ErrInternal, Message: "cancelled by an operator"}
	for _, tt := range []struct {
		name string
		// during the first attempt, or during the backoff that follows it
		duringAttempt bool
	}{
		{"MarkFailedBeforeTheRetryIsRecorded", true},
		{"MarkFailedDuringTheBackoff", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &failingStore{Store: NewMemoryStore(), se: external}
			clock := newFakeClock()
			var calls atomic.Int32
			m := NewMux()
			m.HandleFunc("flaky", func(context.Context, *Envelope) (any, error) {
				if calls.Add(1) == 1 && tt.duringAttempt {
					st.armed.Store(true)
				}
				return nil, &mcp.StructuredError{Code: CodeUnavailable, Message: "try later"}
			})
			policy := RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond}
			n := New(st, m, &Options{Clock: clock, PollInterval: -1, Retry: &policy, Logger: quietLogger,
				Rand: func() float64 { return 0 }})
			require.NoError(t, n.Start(bg))
			t.Cleanup(func() { n.Close(bg) })

			id, err := n.Submit(bg, "client", "flaky", 1)
			require.NoError(t, err)
			n.bg.Wait()
			require.Equal(t, int32(1), calls.Load())
			if !tt.duringAttempt {
				require.NoError(t, st.MarkFailed(bg, id, external))
			}
			for i := 0; i < 10; i++ {
				clock.Advance(time.Second)
				poll(t, n)
			}
			assert.Equal(t, int32(1), calls.Load(), "the request ran again after it was failed")
			rec, err := st.GetRequestRecord(bg, id)
			require.NoError(t, err)
			assert.Equal(t, OutcomeFailed, rec.Status)
			assert.Equal(t, external, rec.Error)
			res, err := n.Await(bg, id)
			require.NoError(t, err)
			assert.Equal(t, OutcomeFailed, res.Outcome)
			assert.Equal(t, external, res.Error)
		})
	}
}

// A node whose lease was taken over while its handler ran (a pause past
// the lease's expiry) cannot commit: its resolution is refused by the
// store, and the new owner's stands.
func TestFencedOwnerCannotCommit(t *testing.T) {
	st := NewMemoryStore()
	clock := newFakeClock()
	opts := func(id string) *Options {
		return &Options{ID: id, Clock: clock, PollInterval: -1, Logger: quietLogger, Rand: func() float64 { return 0 }}
	}
	blocking := func(result string, started chan<- struct{}, release <-chan struct{}) *Mux {
		m := NewMux()
		m.HandleFunc("worker", func(context.Context, *Envelope) (any, error) {
			started <- struct{}{}
			<-release
			return result, nil
		})
		return m
	}
	started1, release1 := make(chan struct{}, 1), make(chan struct{})
	n1 := New(st, blocking("old", started1, release1), opts("node-1"))
	require.NoError(t, n1.Start(bg))
	defer n1.Close(bg)
	started2, release2 := make(chan struct{}, 1), make(chan struct{})
	n2 := New(st, blocking("new", started2, release2), opts("node-2"))
	require.NoError(t, n2.Start(bg))
	defer n2.Close(bg)
	require.True(t, n1.Owns("worker"))
	require.False(t, n2.Owns("worker"))

	id, err := n1.Submit(bg, "client", "worker", 1)
	require.NoError(t, err)
	<-started1 // n1's handler runs, and n1 stops renewing (paused)

	clock.Advance(DefaultLeaseTTL)
	_, err = n2.Poll(bg) // takes the agent over, runs the pending request again
	require.NoError(t, err)
	require.True(t, n2.Owns("worker"))
	<-started2

	close(release1) // the old owner wakes up and tries to commit
	n1.bg.Wait()
	rec, err := st.GetRequestRecord(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeUnknown, rec.Status, "the old owner's resolution was refused")
	assert.False(t, n1.Owns("worker"), "the refusal told the old owner it lost the lease")

	close(release2)
	n2.bg.Wait()
	res, err := n2.Await(bg, id)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, res.Outcome)
	assert.JSONEq(t, `"new"`, string(res.Result))
}

// Lease options out of their bounds fail Start with an error naming the
// option; zero ones take their defaults.
func TestLeaseOptionBounds(t *testing.T) {
	for _, tt := range []struct {
		ttl, renew time.Duration
		err        string
	}{
		{0, 0, ""},
		{time.Second, 0, ""},
		{MinLeaseTTL, MinLeaseRenewInterval, ""},
		{MaxLeaseTTL, MaxLeaseTTL / 2, ""},
		{MinLeaseTTL - 1, 0, "Options.LeaseTTL"},
		{MaxLeaseTTL + 1, 0, "Options.LeaseTTL"},
		{-time.Second, 0, "Options.LeaseTTL"},
		{time.Second, time.Second/2 + 1, "Options.LeaseRenewInterval"},
		{time.Second, MinLeaseRenewInterval - 1, "Options.LeaseRenewInterval"},
		{time.Second, -1, "Options.LeaseRenewInterval"},
	} {
		n := New(NewMemoryStore(), echoMux(nil), &Options{LeaseTTL: tt.ttl, LeaseRenewInterval: tt.renew, PollInterval: -1,
			Logger: quietLogger})
		err := n.Start(bg)
		if tt.err == "" {
			assert.NoError(t, err, "ttl %v renew %v", tt.ttl, tt.renew)
		} else {
			assert.ErrorContains(t, err, tt.err, "ttl %v renew %v", tt.ttl, tt.renew)
		}
		n.Close(bg)
	}
	n := New(NewMemoryStore(), echoMux(nil), nil)
	assert.Equal(t, DefaultLeaseTTL, n.opts.LeaseTTL)
	assert.Equal(t, DefaultLeaseTTL/3, n.opts.LeaseRenewInterval)
}

// A node stops counting on a lease it could not renew in time; it renews
// it when nobody took it over meanwhile, and gives the agent up when its
// renewal finds it taken over: its requests go to the new owner.
func TestLeaseExpiryAndLoss(t *testing.T) {
	st := NewMemoryStore()
	clock := newFakeClock()
	var runs1, runs2 counter
	opts := func(id string) *Options {
		return &Options{ID: id, Clock: clock, PollInterval: -1, Logger: quietLogger, Rand: func() float64 { return 0 }}
	}
	n1 := New(st, echoMux(&runs1), opts("node-1"))
	require.NoError(t, n1.Start(bg))
	defer n1.Close(bg)
	require.True(t, n1.Owns("echo"))

	// Paused past the expiry: not the owner as far as it knows...
	clock.Advance(DefaultLeaseTTL)
	assert.False(t, n1.Owns("echo"))
	// ...but nobody took over, so its renewal succeeds with the same token.
	poll(t, n1)
	assert.True(t, n1.Owns("echo"))
	l, err := st.GetLease(bg, "echo")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), l.Token)

	// Now another node takes over while node-1 is paused.
	n2 := New(st, echoMux(&runs2), opts("node-2"))
	require.NoError(t, n2.Start(bg))
	defer n2.Close(bg)
	assert.False(t, n2.Owns("echo"))
	clock.Advance(DefaultLeaseTTL)
	poll(t, n2)
	require.True(t, n2.Owns("echo"))
	poll(t, n1) // the renewal finds the lease taken over
	assert.False(t, n1.Owns("echo"))

	// A request sent through node-1 is left in the ledger for node-2.
	id, err := n1.Submit(bg, "client", "echo", 7)
	require.NoError(t, err)
	n1.bg.Wait()
	assert.Zero(t, runs1.get(id))
	poll(t, n2)
	res, err := n2.Await(bg, id)
	require.NoError(t, err)
	assert.JSONEq(t, "7", string(res.Result))
	assert.Equal(t, 1, runs2.get(id))
	poll(t, n1)
	assert.Zero(t, runs1.total(), "node-1 waits: it tries again every renew interval, the lease is held")
}

// An execution that waited for a background slot reads the ledger again
// before it runs: a request failed from outside while it was queued does
// not run, and keeps the external error.
func TestQueuedAttemptRechecksLedger(t *testing.T) {
	external := &mcp.StructuredError{Code: mcp.ErrInternal, Message: "cancelled by an operator"}
	started, release := make(chan struct{}, 2), make(chan struct{})
	var calls atomic.Int32
	m := NewMux()
	m.HandleFunc("worker", func(context.Context, *Envelope) (any, error) {
		calls.Add(1)
		started <- struct{}{}
		<-release
		return "ok", nil
	})
	n, st, _ := manualNode(t, m, &Options{MaxBackground: 1})
	first, err := n.Submit(bg, "client", "worker", 1)
	require.NoError(t, err)
	<-started
	second, err := n.Submit(bg, "client", "worker", 2)
	require.NoError(t, err)
	require.NoError(t, st.MarkFailed(bg, second, external))
	close(release)
	n.bg.Wait()
	assert.Equal(t, int32(1), calls.Load(), "the queued request ran after it was recorded FAILED")
	rec, err := st.GetRequestRecord(bg, second)
	require.NoError(t, err)
	assert.Equal(t, OutcomeFailed, rec.Status)
	assert.Equal(t, external, rec.Error)
	rec, err = st.GetRequestRecord(bg, first)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, rec.Status)
}

// A node that does not hold the lease of an agent it hosts cannot send as
// that agent: not after its lease was taken over (the first refusal and
// every later send), and not as a standby that never held it.
func TestSendAsAgentWithoutLeaseRefused(t *testing.T) {
	st := NewMemoryStore()
	clock := newFakeClock()
	opts := func(id string) *Options {
		return &Options{ID: id, Clock: clock, PollInterval: -1, Logger: quietLogger, Rand: func() float64 { return 0 }}
	}
	n1 := New(st, echoMux(nil), opts("node-1"))
	require.NoError(t, n1.Start(bg))
	defer n1.Close(bg)
	n2 := New(st, echoMux(nil), opts("node-2"))
	require.NoError(t, n2.Start(bg))
	defer n2.Close(bg)
	require.True(t, n1.Owns("echo"))

	_, err := n2.SendReliable(bg, "echo", "echo", 1)
	require.ErrorIs(t, err, ErrLeaseLost, "a standby sent as the agent")

	clock.Advance(DefaultLeaseTTL)
	_, err = n2.Poll(bg) // takes the agent over
	require.NoError(t, err)
	require.True(t, n2.Owns("echo"))
	for i := range 3 {
		_, err = n1.SendReliable(bg, "echo", "echo", i)
		require.ErrorIs(t, err, ErrLeaseLost, "send %d as the agent by the node that lost its lease", i)
	}
	_, err = n2.SendReliable(bg, "echo", "echo", 1)
	require.NoError(t, err, "the new owner sends as the agent")
}

// Close stops new work at once: a recovery of a taken-over backlog starts
// no handler after Close began (at most one that passed its check as Close
// began), and Close does not wait for the backlog to run.
func TestCloseStopsTakeoverRecovery(t *testing.T) {
	st := NewMemoryStore()
	clock := newFakeClock()
	opts := func(id string) *Options {
		return &Options{ID: id, Clock: clock, PollInterval: -1, Logger: quietLogger, Rand: func() float64 { return 0 },
			MaxBackground: 1}
	}
	release := make(chan struct{})
	old := NewMux()
	old.HandleFunc("worker", func(context.Context, *Envelope) (any, error) {
		<-release
		return "old", nil
	})
	n1 := New(st, old, opts("node-1"))
	require.NoError(t, n1.Start(bg))
	defer func() { close(release); n1.Close(bg) }()
	const backlog = 100
	for i := range backlog {
		_, err := n1.Submit(bg, "client", "worker", i)
		require.NoError(t, err)
	}

	var closing atomic.Bool
	var started, afterClose atomic.Int32
	m := NewMux()
	m.HandleFunc("worker", func(context.Context, *Envelope) (any, error) {
		started.Add(1)
		if closing.Load() {
			afterClose.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		return "new", nil
	})
	n2 := New(st, m, opts("node-2"))
	require.NoError(t, n2.Start(bg))
	clock.Advance(DefaultLeaseTTL)
	_, err := n2.Poll(bg) // takes the agent over and recovers its backlog
	require.NoError(t, err)
	require.True(t, n2.Owns("worker"))
	require.Eventually(t, func() bool { return started.Load() >= 3 }, 5*time.Second, time.Millisecond)
	closing.Store(true)
	begin := time.Now()
	require.NoError(t, n2.Close(bg))
	took := time.Since(begin)
	assert.LessOrEqual(t, afterClose.Load(), int32(1), "handlers started after Close began")
	assert.Less(t, started.Load(), int32(backlog/2), "the backlog ran during Close")
	t.Logf("Close took %v; %d handlers started, %d after Close began", took, started.Load(), afterClose.Load())
}

// Executions waiting for a handler's retry count against what a node can
// take: while failing requests wait out their backoff, polls stop
// claiming once slots, queue and retries together reach the node's
// capacity (plus at most one claim), instead of holding every message.
func TestRetriesBoundClaims(t *testing.T) {
	st := NewMemoryStore()
	clock := newFakeClock()
	m := NewMux()
	m.HandleFunc("worker", func(context.Context, *Envelope) (any, error) {
		return nil, &mcp.StructuredError{Code: CodeUnavailable, Message: "try later"}
	})
	policy := RetryPolicy{MaxAttempts: 5, BaseDelay: time.Hour}
	recv := New(st, m, &Options{ID: "receiver", Clock: clock, PollInterval: -1, Logger: quietLogger, Retry: &policy,
		Rand: func() float64 { return 0 }, MaxBackground: 2, ClaimLimit: 4})
	require.NoError(t, recv.Start(bg))
	defer recv.Close(bg)
	sender := New(st, NewMux(), &Options{ID: "sender", Clock: clock, PollInterval: -1, Logger: quietLogger})
	require.NoError(t, sender.Start(bg))
	defer sender.Close(bg)
	const sent = 100
	for i := range sent {
		_, err := sender.Submit(bg, "client", "worker", i)
		require.NoError(t, err)
	}
	for range 50 {
		poll(t, recv)
	}
	recv.rmu.Lock()
	waiting := len(recv.retries)
	recv.rmu.Unlock()
	capacity := recv.opts.MaxBackground + recv.queueLimit()
	assert.Positive(t, waiting)
	assert.LessOrEqual(t, waiting, capacity+recv.opts.ClaimLimit, "executions held in the retries")
	assert.Zero(t, recv.queueRoom(), "a full node has no room to claim")
}

// A node whose acknowledgments are refused because its lease was taken
// over gives the lease up (it stops claiming for the agent), as any other
// refused write does.
func TestRefusedAcknowledgmentGivesLeaseUp(t *testing.T) {
	st := NewMemoryStore()
	clock := newFakeClock()
	opts := func(id string) *Options {
		return &Options{ID: id, Clock: clock, PollInterval: -1, Logger: quietLogger, Rand: func() float64 { return 0 }}
	}
	n1 := New(st, echoMux(nil), opts("node-1"))
	require.NoError(t, n1.Start(bg))
	defer n1.Close(bg)
	n2 := New(st, echoMux(nil), opts("node-2"))
	require.NoError(t, n2.Start(bg))
	defer n2.Close(bg)
	sender := New(st, NewMux(), opts("sender"))
	require.NoError(t, sender.Start(bg))
	defer sender.Close(bg)

	_, err := sender.Submit(bg, "client", "echo", 1)
	require.NoError(t, err)
	require.Equal(t, 1, poll(t, n1)) // handled; its acknowledgment waits for the next flush
	clock.Advance(DefaultLeaseTTL)
	_, err = n2.Poll(bg) // takes the agent over
	require.NoError(t, err)
	require.True(t, n2.Owns("echo"))

	require.NoError(t, n1.flushAcks(bg))
	_, held := n1.fenceFor("echo")
	assert.False(t, held, "the node kept the lease after its acknowledgment was refused")
}
