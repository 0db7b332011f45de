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

// resolveFailStore fails its next fail Resolve calls with a transient
// error, writing nothing, as a busy database would.
type resolveFailStore struct {
	*MemoryStore
	fail  atomic.Int32
	calls atomic.Int32
}

func (s *resolveFailStore) Resolve(ctx context.Context, res *Resolution, msg *MessageRecord, f Fence) (bool, error) {
	s.calls.Add(1)
	if s.fail.Add(-1) >= 0 {
		return false, errors.New("transient: database is locked")
	}
	return s.MemoryStore.Resolve(ctx, res, msg, f)
}

// undeliverableEP refuses every message as undeliverable.
type undeliverableEP struct{ *Mux }

func (undeliverableEP) Dispatch(context.Context, *Envelope, DoneFunc) error { return ErrUndeliverable }

// A resolution whose write fails for a transient reason is written again:
// the request's seq was marked received when its handler got it, so the
// ledger would not deliver it again, and the request must not stay
// pending with its message acknowledged until the next restart.
func TestResolutionWriteRetried(t *testing.T) {
	for _, tc := range []struct {
		name          string
		undeliverable bool
		fail          int32
		final         bool
	}{
		{"handler ran, one failed write", false, 1, true},
		{"handler ran, three failed writes", false, 3, true},
		{"undeliverable, one failed write", true, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &resolveFailStore{MemoryStore: NewMemoryStore()}
			st.fail.Store(tc.fail)
			var c counter
			var ep Endpoint = echoMux(&c)
			if tc.undeliverable {
				ep = undeliverableEP{echoMux(nil)}
			}
			n := New(st, ep, &Options{Clock: newFakeClock(), PollInterval: -1, Logger: quietLogger, Rand: func() float64 { return 0 }})
			require.NoError(t, n.Start(bg))
			t.Cleanup(func() { n.Close(bg) })
			id, err := n.Submit(bg, "client", "echo", 1)
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				rec, err := st.GetRequestRecord(bg, id)
				return err == nil && rec.Status.Final()
			}, 10*time.Second, 5*time.Millisecond, "the request stays pending with its message acknowledged")
			assert.EqualValues(t, tc.fail+1, st.calls.Load(), "written again after each failure, then once")
			if !tc.undeliverable {
				assert.Equal(t, 1, c.get(id), "the handler ran once")
			}
		})
	}
}
