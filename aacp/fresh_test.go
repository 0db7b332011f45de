package aacp

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hookStore is a MemoryStore that counts request reads and runs afterEnqueue
// (if set) once an Enqueue has stored its records, or fails the Enqueue
// with failEnqueue. afterRead (if set) runs after each read that found a
// request record.
type hookStore struct {
	*MemoryStore
	reads        atomic.Int32
	afterEnqueue func(msg *MessageRecord)
	afterRead    func(rec *RequestRecord)
	failEnqueue  error
}

func (s *hookStore) GetRequestRecord(ctx context.Context, id string) (*RequestRecord, error) {
	s.reads.Add(1)
	rec, err := s.MemoryStore.GetRequestRecord(ctx, id)
	if err == nil && s.afterRead != nil {
		s.afterRead(rec)
	}
	return rec, err
}

func (s *hookStore) Enqueue(ctx context.Context, req *RequestRecord, msg *MessageRecord, f Fence) error {
	if s.failEnqueue != nil {
		return s.failEnqueue
	}
	if err := s.MemoryStore.Enqueue(ctx, req, msg, f); err != nil {
		return err
	}
	if s.afterEnqueue != nil && msg.Envelope.MessageType == MessageRequest {
		s.afterEnqueue(msg)
	}
	return nil
}

func hookNode(t *testing.T, st *hookStore, mux *Mux) *Node {
	t.Helper()
	n := New(st, mux, &Options{Logger: quietLogger, PollInterval: -1, Rand: func() float64 { return 0 }})
	require.NoError(t, n.Start(bg))
	t.Cleanup(func() { n.Close(bg) })
	return n
}

func (n *Node) inflightCount() int {
	n.imu.Lock()
	defer n.imu.Unlock()
	return len(n.inflight)
}

// A request sent to a local agent under an id the node made up runs
// without reading its record back: the claim of the id was the ledger's
// check. A caller's id (WithRequestID), which others may send at once, is
// read before the run.
func TestFreshSendReadsNoRecord(t *testing.T) {
	var c counter
	st := &hookStore{MemoryStore: NewMemoryStore()}
	n := hookNode(t, st, echoMux(&c))
	st.reads.Store(0)
	for i := range 3 {
		res, err := n.SendRequest(bg, "client", "echo", i)
		require.NoError(t, err)
		assert.JSONEq(t, []string{"0", "1", "2"}[i], string(res))
	}
	_, err := n.SendReliable(bg, "client", "echo", "event")
	require.NoError(t, err)
	n.bg.Wait()
	assert.Zero(t, st.reads.Load(), "fresh sends read no request record")
	assert.Equal(t, 4, c.total())

	id := newUUID()
	_, err = n.SendRequest(bg, "client", "echo", 9, WithRequestID(id))
	require.NoError(t, err)
	assert.Positive(t, st.reads.Load(), "a caller's id is read before its run")
	assert.Equal(t, 1, c.get(id))
	assert.Zero(t, n.inflightCount())
}

// Between the claim of a fresh request's id and its run, the other paths
// of the node that deliver it (a claim of the ledger's due messages, a
// recovery of pending requests) find it being processed: it runs once.
func TestFreshSendDeliveredMeanwhileRunsOnce(t *testing.T) {
	var c counter
	st := &hookStore{MemoryStore: NewMemoryStore()}
	n := hookNode(t, st, echoMux(&c))
	var delivered atomic.Int32
	st.afterEnqueue = func(msg *MessageRecord) {
		delivered.Add(1)
		n.receive(bg, &msg.Envelope, nil, false) // as a claim would
		rec, err := st.MemoryStore.GetRequestRecord(bg, msg.RequestID)
		require.NoError(t, err)
		assert.True(t, n.rerun(bg, rec, runBlocking)) // as a recovery would
		n.bg.Wait()
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	for i := range 5 {
		res, err := n.SendRequest(ctx, "client", "echo", i)
		require.NoError(t, err)
		assert.JSONEq(t, []string{"0", "1", "2", "3", "4"}[i], string(res))
	}
	n.bg.Wait()
	assert.Equal(t, int32(5), delivered.Load())
	assert.Equal(t, 5, c.total())
	for id, k := range c.n {
		assert.Equal(t, 1, k, "request %s ran once", id)
	}
	assert.Zero(t, n.inflightCount())
}

// A send whose claim fails ends the execution it began: nothing stays
// marked as being processed.
func TestFreshSendFailedClaimEndsExecution(t *testing.T) {
	var c counter
	boom := errors.New("ledger down")
	st := &hookStore{MemoryStore: NewMemoryStore()}
	n := hookNode(t, st, echoMux(&c))
	st.failEnqueue = boom
	_, err := n.SendRequest(bg, "client", "echo", 1)
	require.ErrorIs(t, err, boom)
	_, err = n.SendReliable(bg, "client", "echo", 2)
	require.ErrorIs(t, err, boom)
	assert.Zero(t, n.inflightCount())
	assert.Zero(t, c.total())
}

// A delivery that finds a request in flight before that execution was
// dispatched (a claim ignoring the schedule: a reopened window, Recover)
// leaves its seq unmarked, and the execution it found is not given up for
// a full queue: it runs once. A fresh send (its execution begun before the
// claim of its id) and a caller's id (begun by its delivery, before the
// ledger read) alike. A quarantined message, whose seq counts as received
// and which is never delivered again, leaves its request to the execution
// in flight as well.
func TestInFlightFoundBeforeDispatchRunsOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		callerID    bool // WithRequestID: the finder runs during the delivery's ledger read
		quarantined bool // the finder delivers the message quarantined
	}{
		{name: "fresh send"},
		{name: "caller's id", callerID: true},
		{name: "fresh send, quarantined", quarantined: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c counter
			release := make(chan struct{})
			mux := NewMux()
			mux.HandleFunc("echo", func(_ context.Context, env *Envelope) (any, error) {
				c.add(env.RequestID)
				<-release
				return env.Payload, nil
			})
			st := &hookStore{MemoryStore: NewMemoryStore()}
			n := New(st, mux, &Options{Logger: quietLogger, PollInterval: -1, Rand: func() float64 { return 0 },
				MaxBackground: 1, ClaimLimit: 1, RetransmitTimeout: 50 * time.Millisecond})
			require.NoError(t, n.Start(bg))
			t.Cleanup(func() { n.Close(bg) })
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }
			t.Cleanup(unblock) // before Close

			// One running, two queued (MaxBackground+ClaimLimit): the
			// node's queue is full.
			for i := range 3 {
				_, err := n.Submit(bg, "client", "echo", i)
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool { n.qmu.Lock(); defer n.qmu.Unlock(); return len(n.queue) == 2 },
				2*time.Second, 5*time.Millisecond)

			var found atomic.Bool
			var seq uint64
			finder := func(msg *MessageRecord) {
				if found.Swap(true) {
					return
				}
				if tc.quarantined {
					ok, err := st.MemoryStore.Quarantine(bg, msg.MessageID, "poison")
					require.NoError(t, err)
					require.True(t, ok)
					m := *msg
					m.DeadReason = "poison"
					n.deliverClaimed(bg, []*MessageRecord{&m})
					return
				}
				_, err := n.claim(bg, []string{"echo"}, n.clock.Now(), 10, true)
				assert.NoError(t, err)
			}
			var opts []SendOption
			if tc.callerID {
				id := newUUID()
				opts = append(opts, WithRequestID(id))
				var stored *MessageRecord
				st.afterEnqueue = func(msg *MessageRecord) { stored, seq = msg, msg.Envelope.Seq }
				st.afterRead = func(rec *RequestRecord) {
					if rec.RequestID == id && !rec.Status.Final() {
						finder(stored)
					}
				}
			} else {
				st.afterEnqueue = func(msg *MessageRecord) {
					seq = msg.Envelope.Seq
					finder(msg)
				}
			}
			id, err := n.Submit(bg, "client", "echo", 4, opts...)
			require.NoError(t, err)
			require.True(t, found.Load(), "another delivery found the request in flight")

			assert.Equal(t, 4, n.inflightCount(), "the request waits in the queue, over its limit")
			w := n.window("client", "echo")
			w.mu.Lock()
			seen := w.seen(seq)
			w.mu.Unlock()
			assert.Equal(t, tc.quarantined, seen, "only a quarantined seq counts as received before its run is dispatched")

			unblock() // the handlers finish: slots and queue free up
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			res, err := n.Await(ctx, id)
			require.NoError(t, err, "the request ran")
			assert.JSONEq(t, "4", string(res.Result))
			n.bg.Wait()
			assert.Equal(t, 1, c.get(id), "it ran once")
			w.mu.Lock()
			assert.True(t, w.seen(seq), "its seq counts as received once it ran")
			w.mu.Unlock()
		})
	}
}

// A fresh inline send whose agent's lease lapsed (the fence still
// current) between the claim of its id and its delivery is not run here;
// a claim that found it in flight meanwhile left its seq unmarked, so once
// the lease is renewed the ledger delivers it again and it runs once.
func TestFreshSendLapsedLeaseIsDeliveredAgain(t *testing.T) {
	var c counter
	st := &hookStore{MemoryStore: NewMemoryStore()}
	n := New(st, echoMux(&c), &Options{Logger: quietLogger, PollInterval: -1, Rand: func() float64 { return 0 },
		RetransmitTimeout: 50 * time.Millisecond})
	require.NoError(t, n.Start(bg))
	t.Cleanup(func() { n.Close(bg) })
	_, err := n.SendRequest(bg, "client", "echo", 0) // the lease is held
	require.NoError(t, err)

	var found atomic.Bool
	st.afterEnqueue = func(msg *MessageRecord) {
		if found.Swap(true) {
			return
		}
		_, err := n.claim(bg, []string{"echo"}, n.clock.Now(), 10, true)
		assert.NoError(t, err)
		n.lmu.Lock()
		al := n.leases["echo"]
		al.validUntil = n.clock.Now().Add(-time.Millisecond) // lapsed; held, so the fence is current
		al.next = al.validUntil                              // renewed at the next poll
		n.lmu.Unlock()
	}
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			n.Poll(ctx)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	res, err := n.SendRequest(ctx, "client", "echo", 1)
	cancel()
	<-done
	require.True(t, found.Load())
	require.NoError(t, err, "the ledger delivered the request again")
	assert.JSONEq(t, "1", string(res))
	n.bg.Wait()
	assert.Equal(t, 2, c.total(), "each request ran once")
}

// A delivery that finds its request in flight, not dispatched yet (here a
// recovery's rerun waiting for a slot), leaves its seq to that execution:
// marked received as soon as the run is dispatched, with no delivery
// again; if the execution is given up instead (its wait for a slot ends),
// the seq stays unmarked and the ledger delivers the request again.
func TestInFlightOwesSeqUntilDispatched(t *testing.T) {
	for _, giveUp := range []bool{false, true} {
		t.Run(map[bool]string{false: "dispatched", true: "given up"}[giveUp], func(t *testing.T) {
			testInFlightOwesSeq(t, giveUp)
		})
	}
}

func testInFlightOwesSeq(t *testing.T, giveUp bool) {
	var c counter
	release := make(chan struct{})
	mux := NewMux()
	mux.HandleFunc("echo", func(_ context.Context, env *Envelope) (any, error) {
		c.add(env.RequestID)
		<-release
		return env.Payload, nil
	})
	st := NewMemoryStore()
	n := New(st, mux, &Options{ID: "host", Logger: quietLogger, PollInterval: -1, Rand: func() float64 { return 0 },
		MaxBackground: 1, RetransmitTimeout: 50 * time.Millisecond})
	require.NoError(t, n.Start(bg))
	t.Cleanup(func() { n.Close(bg) })
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before Close
	sender := New(st, NewMux(), &Options{ID: "sender", Logger: quietLogger, PollInterval: -1})
	require.NoError(t, sender.Start(bg))
	t.Cleanup(func() { sender.Close(bg) })

	_, err := n.Submit(bg, "client", "echo", 0) // takes the only slot
	require.NoError(t, err)
	id, err := sender.Submit(bg, "client", "echo", 1) // left in the ledger
	require.NoError(t, err)
	msgs, err := st.ListMessagesInState(bg, OutcomeUnknown, time.Time{})
	require.NoError(t, err)
	var seq uint64
	for _, m := range msgs {
		if m.RequestID == id {
			seq = m.Envelope.Seq
		}
	}
	require.NotZero(t, seq)

	rec, err := st.GetRequestRecord(bg, id)
	require.NoError(t, err)
	rctx, rcancel := context.WithCancel(bg)
	defer rcancel()
	reran := make(chan bool, 1)
	go func() { reran <- n.rerun(rctx, rec, runBlocking) }() // waits for the slot
	require.Eventually(t, func() bool { return n.inflightCount() == 2 }, 2*time.Second, 5*time.Millisecond)
	k, err := n.claim(bg, []string{"echo"}, n.clock.Now(), 10, true)
	require.NoError(t, err)
	require.Equal(t, 2, k, "the claim delivered both requests")

	seen := func() bool {
		w := n.window("client", "echo")
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.seen(seq)
	}
	assert.False(t, seen(), "not received while its run may still be given up")
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if giveUp {
		rcancel()
		require.False(t, <-reran, "the rerun gave the request up")
		assert.False(t, seen(), "a request given up is not received")
		unblock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				n.Poll(ctx)
				time.Sleep(20 * time.Millisecond)
			}
		}()
		defer func() { cancel(); <-done }()
	} else {
		unblock()
		require.True(t, <-reran)
		require.Eventually(t, seen, 2*time.Second, 5*time.Millisecond, "received once the run is dispatched")
	}
	res, err := n.Await(ctx, id)
	require.NoError(t, err)
	assert.JSONEq(t, "1", string(res.Result))
	n.bg.Wait()
	assert.Equal(t, 1, c.get(id), "it ran once")
	require.Eventually(t, seen, 2*time.Second, 5*time.Millisecond)
}
