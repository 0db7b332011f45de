package streamhttp

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

// isClosedChan reports whether c is closed (without waiting).
func isClosedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// The signals of a session, a stream and an attachment (ended, finished,
// given up) make their channel only when something waits: what fires
// before makes none, a waiter that comes after gets a closed channel,
// one that comes before gets the channel that firing closes, and firing
// twice closes nothing twice.
func TestSignalsMakeTheirChannelOnFirstWait(t *testing.T) {
	h := NewHandler(&Options{Serve: func(ctx context.Context, _ transport.Transport) error { <-ctx.Done(); return nil }})
	t.Cleanup(func() { _ = h.Close() })

	t.Run("fired before any wait", func(t *testing.T) {
		s := h.newHTTPSession(context.Background(), nil, 1)
		st := newStream(s)
		st.mu.Lock()
		a := st.attachLocked(nil, nil)
		st.finishLocked()
		st.finishLocked()
		st.dropAttLocked(a)
		st.dropAttLocked(a)
		assert.Nil(t, st.done)
		assert.Nil(t, a.gone)
		assert.True(t, isClosedChan(st.doneLocked()))
		assert.True(t, isClosedChan(a.goneLocked()))
		st.mu.Unlock()
		s.close()
		assert.True(t, s.isClosed())
		assert.True(t, isClosedChan(s.doneChan()))
		s.mu.Lock()
		assert.Nil(t, s.done)
		s.mu.Unlock()
	})

	t.Run("waited before firing", func(t *testing.T) {
		s := h.newHTTPSession(context.Background(), nil, 1)
		st := newStream(s)
		st.mu.Lock()
		a := st.attachLocked(nil, nil)
		done, gone := st.doneLocked(), a.goneLocked()
		require.Equal(t, done, st.doneLocked(), "one channel")
		assert.False(t, isClosedChan(done))
		assert.False(t, isClosedChan(gone))
		st.finishLocked()
		st.dropAttLocked(a)
		st.dropAttLocked(a)
		st.mu.Unlock()
		assert.True(t, isClosedChan(done))
		assert.True(t, isClosedChan(gone))

		sd := s.doneChan()
		assert.False(t, isClosedChan(sd))
		assert.False(t, s.isClosed())
		s.close()
		s.close()
		assert.True(t, isClosedChan(sd))
	})

	t.Run("a stream finished before its wait", func(t *testing.T) {
		s := h.newHTTPSession(context.Background(), nil, 1)
		st := newStream(s)
		st.mu.Lock()
		a := st.attachLocked(nil, nil)
		st.finishLocked()
		st.mu.Unlock()
		r, err := http.NewRequest(http.MethodPost, "/", nil)
		require.NoError(t, err)
		assert.True(t, st.wait(r, a), "finished")
		assert.Nil(t, st.done, "nothing waited")
		s.close()
	})
}
