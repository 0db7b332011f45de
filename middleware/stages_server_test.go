package middleware

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// The slot is held until the handler returns, even after the chain
// returned TIMEOUT at the deadline.
func TestConcurrencySlotHeldUntilHandlerReturnsAfterTimeout(t *testing.T) {
	tt := newTestTools(t)
	lim := NewLimiter(1)
	s := serve(t, New(tt.reg, lim.Middleware(), Timeout(10*time.Millisecond)))
	defer tt.free()
	a := s.call(t.Context(), "block", `{}`) // TIMEOUT, answered while the handler still runs
	hctx := <-tt.started
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, a.err).Code)
	assert.Error(t, hctx.Err(), "the handler's context is cancelled before TIMEOUT is answered")
	r := s.next(t)
	assert.Equal(t, "block", r.name, "the chain returned at the deadline")
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, r.err).Code)
	assert.Equal(t, 1, lim.InUse(), "slot still held: the handler runs on")
	a = s.call(t.Context(), "echo", `{"message":"x"}`)
	assert.Equal(t, mcp.ErrResourceExhausted, structuredErr(t, a.err).Code)
	assert.Equal(t, "echo", s.next(t).name)
	tt.free()
	assert.Eventually(t, func() bool { return lim.InUse() == 0 }, waitLimit, time.Millisecond, "released when the handler returns")
}

// Served by a Server, the chain returns TIMEOUT at the deadline while the
// handler still runs, with the call's ids, and the Server sends it as any
// answer; what the handler returns later is logged and never sent.
func TestTimeoutAnswersAtOnce(t *testing.T) {
	tt := newTestTools(t)
	s := serve(t, New(tt.reg, Timeout(20*time.Millisecond)))
	defer tt.free()
	start := time.Now()
	a := s.call(t.Context(), "block", `{}`) // block waits for release: only the deadline can answer
	hctx := <-tt.started
	dl, ok := hctx.Deadline()
	assert.True(t, ok, "the handler sees the deadline")
	assert.False(t, dl.Before(start.Add(20*time.Millisecond)), "deadline %v", dl.Sub(start))
	assert.False(t, dl.After(a.at.Add(20*time.Millisecond)), "deadline %v", dl.Sub(start))
	assert.GreaterOrEqual(t, a.at.Sub(start), 20*time.Millisecond, "never before the deadline")
	require.NotNil(t, a.res)
	assert.True(t, a.res.IsError)
	assert.Nil(t, a.res.StructuredContent)
	tc := mcp.ToolCallFromContext(hctx)
	require.NotNil(t, tc)
	se := structuredErr(t, a.err)
	assert.Equal(t, mcp.ErrTimeout, se.Code)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.Equal(t, tc.RunID, se.RunID)
	assert.NotEmpty(t, se.RunID)
	assert.EqualValues(t, 20, se.Details["timeoutMs"])
	assert.ErrorIs(t, hctx.Err(), context.DeadlineExceeded)
	r := s.next(t)
	assert.Equal(t, "block", r.name, "CallTool returned at the deadline")
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, r.err).Code)

	tt.free() // the handler finishes late
	assert.Eventually(t, func() bool { return strings.Contains(s.logs.String(), "returned after its deadline") }, waitLimit, time.Millisecond)
	s.flush(t)
	assert.Equal(t, 1, s.wire.count(tc.RunID), "one answer on the wire: the late result is dropped")
	a = s.call(t.Context(), "echo", `{"message":"alive"}`)
	require.NoError(t, a.err)
	assert.Equal(t, "alive", a.res.Content[0].Text)
}
