package middleware

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
)

// ctxSink records the context each Exit receives.
type ctxSink struct{ exits chan context.Context }

func (ctxSink) Enter(context.Context, ToolEnterEvent) error { return nil }
func (s ctxSink) Exit(ctx context.Context, _ ToolExitEvent) error {
	s.exits <- ctx
	return nil
}

// panicSink panics in Exit.
type panicSink struct{}

func (panicSink) Enter(context.Context, ToolEnterEvent) error { return nil }
func (panicSink) Exit(context.Context, ToolExitEvent) error   { panic("audit sink boom") }

type ctxKey struct{}

// blockUntil is a handler that ignores its context and returns once
// release is closed, then reports on returned.
func blockUntil(release <-chan struct{}, returned chan<- struct{}) Handler {
	return func(context.Context, *Call) (*mcp.CallToolResult, error) {
		<-release
		if returned != nil {
			defer close(returned)
		}
		return mcp.TextResult("late"), nil
	}
}

// The audit record of a call answered at its deadline is sent when the
// handler returns, after the caller's context has ended: the sink gets
// the call's values, without the cancellation.
func TestAuditExitAfterDeadlineGetsLiveContext(t *testing.T) {
	release := make(chan struct{})
	sink := ctxSink{exits: make(chan context.Context, 1)}
	h := AuditExit(sink)(Timeout(5 * time.Millisecond)(blockUntil(release, nil)))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	_, err := h(ctx, NewCall(nil, call("x", `{}`, nil)))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	cancel() // as the Server does once the request is answered
	close(release)
	select {
	case got := <-sink.exits:
		assert.NoError(t, got.Err(), "Exit's context is not cancelled")
		assert.Equal(t, "v", got.Value(ctxKey{}), "Exit's context keeps the call's values")
	case <-time.After(5 * time.Second):
		t.Fatal("no audit exit")
	}
}

// A panic in a function given to AfterHandler that runs when a detached
// handler returns (on the handler's goroutine, outside Recover) is logged
// with its stack; the process lives on and the later functions run: the
// limiter's slot is released.
func TestAfterHandlerPanicOnDetachedPath(t *testing.T) {
	lim := NewLimiter(1)
	release, returned := make(chan struct{}), make(chan struct{})
	logs := &exampletest.SafeBuffer{}
	h := Recover()(lim.Middleware()(AuditExit(panicSink{})(Timeout(5 * time.Millisecond)(blockUntil(release, returned)))))
	_, err := h(context.Background(), NewCall(nil, call("x", `{}`, logs)))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	assert.Equal(t, 1, lim.InUse(), "the slot is held while the handler runs")
	close(release)
	<-returned
	require.Eventually(t, func() bool { return lim.InUse() == 0 }, 5*time.Second, time.Millisecond, "the slot is released after the panicking hook")
	assert.Contains(t, logs.String(), "audit sink boom")
	assert.Contains(t, logs.String(), "stack=")
	// A later call gets the slot (not RESOURCE_EXHAUSTED); its handler
	// returns at once, and the sink's panic on the caller's goroutine is
	// Recover's.
	_, err = h(context.Background(), NewCall(nil, call("x", `{}`, nil)))
	assert.Equal(t, mcp.ErrInternal, structuredErr(t, err).Code, "a later call gets the slot")
	assert.Equal(t, 0, lim.InUse())
}

// Nested Timeout stages whose deadlines pass together: every call is
// answered TIMEOUT, and the late outcome the audit reads is the handler's
// own, set by one stage (run with -race).
func TestTimeoutNestedLateOutcome(t *testing.T) {
	handler := func(context.Context, *Call) (*mcp.CallToolResult, error) {
		time.Sleep(15 * time.Millisecond)
		return mcp.TextResult("late"), nil
	}
	h := Timeout(5*time.Millisecond + 20*time.Microsecond)(Timeout(5 * time.Millisecond)(handler))
	const calls = 100
	var wg sync.WaitGroup
	type late struct {
		res      *mcp.CallToolResult
		err      error
		timedOut bool
	}
	got := make(chan late, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewCall(nil, call("x", `{}`, nil))
			_, err := h(context.Background(), c)
			assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
			c.AfterHandler(func() { res, err := c.late(); got <- late{res, err, c.TimedOut()} })
		}()
		time.Sleep(200 * time.Microsecond)
	}
	wg.Wait()
	for range calls {
		select {
		case l := <-got:
			assert.True(t, l.timedOut)
			assert.NoError(t, l.err)
			if assert.NotNil(t, l.res, "the late outcome is the handler's result") {
				assert.Equal(t, "late", l.res.Content[0].Text)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a call's handler never ended")
		}
	}
}

// panickingTool panics at once; its frame must appear in Recover's log.
func panickingTool(context.Context, *Call) (*mcp.CallToolResult, error) {
	panic("tool boom")
}

// A handler's panic before its deadline is raised again on the caller's
// goroutine carrying the handler's stack: Recover's log shows the tool's
// frame, through nested Timeout stages too.
func TestTimeoutPanicCarriesHandlerStack(t *testing.T) {
	for name, h := range map[string]Handler{
		"one":    Recover()(Timeout(time.Hour)(panickingTool)),
		"nested": Recover()(Timeout(time.Hour)(Timeout(time.Hour)(panickingTool))),
	} {
		t.Run(name, func(t *testing.T) {
			logs := &exampletest.SafeBuffer{}
			_, err := h(context.Background(), NewCall(nil, call("x", `{}`, logs)))
			se := structuredErr(t, err)
			assert.Equal(t, mcp.ErrInternal, se.Code)
			assert.Equal(t, "panic", se.Details["reason"])
			assert.Contains(t, logs.String(), "panic=\"tool boom\"")
			assert.Contains(t, logs.String(), "panickingTool", "the handler's frame is logged")
		})
	}
}

// A handler that panics once its deadline has passed is answered TIMEOUT
// (the deadline rule), whether the stage has returned already or reads
// the panic itself; the panic is logged with its stack.
func TestTimeoutPanicAfterDeadline(t *testing.T) {
	logs := &exampletest.SafeBuffer{}
	handler := func(ctx context.Context, _ *Call) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		panic("late boom")
	}
	h := Recover()(Timeout(time.Millisecond)(handler))
	for range 50 {
		_, err := h(context.Background(), NewCall(nil, call("x", `{}`, logs)))
		assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	}
	require.Eventually(t, func() bool {
		return countSubstr(logs.String(), "panic=\"late boom\"") == 50
	}, 5*time.Second, time.Millisecond, "every late panic is logged")
	assert.NotContains(t, logs.String(), "panic while serving a tool call", "no late panic reaches Recover")
}

func countSubstr(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}
