package mcp

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

// A session that serves 2026-07-28 requests only carries no 2025 state
// (session2025): what reads it finds none and allocates nothing, and the
// first use allocates it once, however many goroutines ask at once. A
// session that can serve 2025 requests has it from the start.
func TestSession2025StateIsAllocatedWhereUsed(t *testing.T) {
	srv := NewServer(&ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	ct, st := transport.NewPipe(nil)
	t.Cleanup(func() { ct.Close(); st.Close() })

	legacy := srv.newSession(st, false)
	assert.NotNil(t, legacy.s25.Load(), "a session that can serve 2025 requests")

	modern := srv.newSession(st, true)
	assert.Nil(t, modern.s25.Load())
	assert.Empty(t, modern.negotiated())
	assert.Zero(t, modern.clientInfo())
	assert.Zero(t, modern.clientCapabilities())
	assert.Empty(t, sessionLogLevel(modern))
	srv.hub.mu.Lock()
	srv.hub.dropSubscriptionsLocked(modern)
	srv.hub.mu.Unlock()
	assert.Nil(t, modern.s25.Load(), "reading the 2025 state allocates none")

	const n = 8
	got := make([]*session2025, n)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = state2025(modern)
		}()
	}
	wg.Wait()
	first := modern.s25.Load()
	require.NotNil(t, first)
	for i, p := range got {
		assert.Same(t, first, p, "goroutine %d", i)
	}
}
