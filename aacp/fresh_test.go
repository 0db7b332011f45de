package aacp

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hookStore is a MemoryStore that counts request reads and runs afterEnqueue
// (if set) once an Enqueue has stored its records, or fails the Enqueue
// with failEnqueue.
type hookStore struct {
	*MemoryStore
	reads        atomic.Int32
	afterEnqueue func(msg *MessageRecord)
	failEnqueue  error
}

func (s *hookStore) GetRequestRecord(ctx context.Context, id string) (*RequestRecord, error) {
	s.reads.Add(1)
	return s.MemoryStore.GetRequestRecord(ctx, id)
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
