//go:build !keel_omit2025

package middleware

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// Nested Timeout stages: the innermost deadline answers, at once, while
// the handler still runs.
func TestTimeoutNested(t *testing.T) {
	tt := newTestTools(t)
	s := serve(t, New(tt.reg, Timeout(time.Hour), Timeout(5*time.Millisecond), Timeout(time.Hour)))
	defer tt.free()
	a := s.call(t.Context(), "block", `{}`) // answered while block waits for release
	<-tt.started
	se := structuredErr(t, a.err)
	assert.Equal(t, mcp.ErrTimeout, se.Code)
	assert.EqualValues(t, 5, se.Details["timeoutMs"])
	tt.free()
	r := s.next(t)
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, r.err).Code)
	assert.EqualValues(t, 5, structuredErr(t, r.err).Details["timeoutMs"])
	a = s.call(t.Context(), "echo", `{"message":"ok"}`)
	require.NoError(t, a.err)
	assert.Equal(t, "ok", a.res.Content[0].Text)
}

// Calls with different deadlines through one Timeout stage: each gets
// TIMEOUT early, while its handler still runs, and never before its own
// deadline.
func TestDeadlineQueueMixedDeadlines(t *testing.T) {
	tt := newTestTools(t)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	delays := []time.Duration{30, 5, 20, 10}
	for i, d := range delays {
		registerRaw(t, tt, "wait"+string(rune('a'+i)), d*time.Millisecond, func(ctx context.Context) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			<-release // answered early, returns late
			return nil, ctx.Err()
		})
	}
	s := serve(t, New(tt.reg, Timeout(time.Hour)))
	defer free()
	var wg sync.WaitGroup
	for i, d := range delays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			a := s.call(t.Context(), "wait"+string(rune('a'+i)), `{}`)
			var se *mcp.StructuredError
			if !assert.ErrorAs(t, a.err, &se, "no early response") {
				return
			}
			assert.Equal(t, mcp.ErrTimeout, se.Code)
			assert.GreaterOrEqual(t, a.at.Sub(start), d*time.Millisecond)
			assert.EqualValues(t, d, se.Details["timeoutMs"])
		}()
	}
	wg.Wait() // every call answered, no handler returned yet
	select {
	case r := <-s.returns:
		t.Fatalf("%s returned before its release", r.name)
	default:
	}
	free()
	for range delays {
		r := s.next(t)
		assert.Equal(t, mcp.ErrTimeout, structuredErr(t, r.err).Code, r.name)
	}
}
