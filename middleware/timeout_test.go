package middleware

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
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

// Calls with different deadlines through one Timeout stage: each chain
// returns TIMEOUT at its deadline, while its handler still runs, and never
// before it.
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
	for range delays {
		r := s.next(t) // the chain returned at each deadline
		assert.Equal(t, mcp.ErrTimeout, structuredErr(t, r.err).Code, r.name)
	}
	free()
}

// A tool with a 100 ms deadline whose handler ignores its context and
// sleeps 400 ms: the Server's middleware (ServerOptions.Middleware, the
// outermost layer of every request) returns at the deadline with the
// TIMEOUT the client gets, not when the handler ends; the concurrency
// slot and the audit-exit record wait for the handler.
func TestServerMiddlewareReturnsAtTheDeadline(t *testing.T) {
	tt := newTestTools(t)
	handlerDone := make(chan struct{})
	registerRaw(t, tt, "sleepy", 100*time.Millisecond, func(context.Context) (*mcp.CallToolResult, error) {
		defer close(handlerDone)
		time.Sleep(400 * time.Millisecond) // ignores its context
		return mcp.TextResult("late"), nil
	})
	sink := &memSink{}
	lim := NewLimiter(4)
	chain := Standard(tt.reg, &StandardOptions{AuditSink: sink, Limiter: lim})
	type took struct {
		d   time.Duration
		res any
		err error
	}
	returned := make(chan took, 1)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: chain, Logger: slog.New(slog.DiscardHandler),
		Middleware: []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, req *mcp.Request) (any, error) {
				if req.Method != "tools/call" {
					return next(ctx, req)
				}
				start := time.Now()
				res, err := next(ctx, req)
				returned <- took{time.Since(start), res, err}
				return res, err
			}
		}}})
	ct, st := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: testProtocolVersion, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, c.Connect(t.Context(), ct))
	t.Cleanup(func() {
		<-handlerDone
		assert.NoError(t, c.Close())
		assert.NoError(t, <-done)
	})

	start := time.Now()
	_, err := c.CallTool(t.Context(), "sleepy", nil)
	answeredAfter := time.Since(start)
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	r := <-returned
	assert.GreaterOrEqual(t, r.d, 100*time.Millisecond)
	assert.Less(t, r.d, 300*time.Millisecond, "the middleware returned at the deadline, not after the 400 ms handler")
	assert.Less(t, answeredAfter, 300*time.Millisecond)
	res, ok := r.res.(*mcp.CallToolResult)
	require.True(t, ok, "the TIMEOUT went through the middleware: %T %v", r.res, r.err)
	assert.True(t, res.IsError)

	assert.Equal(t, 1, lim.InUse(), "the slot is held while the handler runs on")
	_, exits := sink.events()
	assert.Empty(t, exits, "audit-exit waits for the handler")
	<-handlerDone
	assert.Eventually(t, func() bool { return lim.InUse() == 0 }, waitLimit, time.Millisecond)
	assert.Eventually(t, func() bool { _, exits := sink.events(); return len(exits) == 1 }, waitLimit, time.Millisecond)
	_, exits = sink.events()
	assert.Equal(t, OutcomeLateCompleted, exits[0].Outcome)
}

// A handler that returns a value as soon as its context is cancelled never
// beats TIMEOUT: once the deadline has passed, the answer is TIMEOUT.
func TestHandlerReturningAtCancellationDoesNotBeatTimeout(t *testing.T) {
	tt := newTestTools(t)
	registerRaw(t, tt, "quick-on-cancel", 5*time.Millisecond, func(ctx context.Context) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return mcp.TextResult("a value, not an error"), nil
	})
	s := serve(t, New(tt.reg, Timeout(time.Hour)))
	for i := range 10 {
		a := s.call(t.Context(), "quick-on-cancel", `{}`)
		var se *mcp.StructuredError
		if assert.ErrorAs(t, a.err, &se, "run %d: %v", i, a.res) {
			assert.Equal(t, mcp.ErrTimeout, se.Code)
		}
		s.next(t)
	}
}
