package middleware

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

func TestRecoverTurnsPanicIntoInternal(t *testing.T) {
	tt := newTestTools(t)
	var logs exampletest.SafeBuffer
	ch := New(tt.reg, Recover())
	res, err := ch.CallTool(context.Background(), call("panic", `{}`, &logs))
	assert.Nil(t, res)
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.Equal(t, map[string]any{"reason": "panic"}, se.Details)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.NotContains(t, se.Message, "boom", "the panic value is logged, not sent")
	out := logs.String()
	assert.Contains(t, out, "panic while serving a tool call")
	assert.Contains(t, out, "panic=boom")
	assert.Contains(t, out, "stages_test.go", "the stack is logged")

	// The chain still serves.
	res, err = ch.CallTool(context.Background(), call("echo", `{"message":"after"}`, nil))
	require.NoError(t, err)
	assert.Equal(t, "after", res.Content[0].Text)
}

func TestPayloadLimitBoundary(t *testing.T) {
	tt := newTestTools(t)
	const limit = 20
	ch := New(tt.reg, PayloadLimit(limit))
	for _, tc := range []struct {
		name string
		size int
		ok   bool
	}{
		{"well under", 15, true},
		{"exactly the limit", limit, true},
		{"one over", limit + 1, false},
		{"far over", 4 * limit, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := `{"message":"` + strings.Repeat("é", 0) + strings.Repeat("x", tc.size-len(`{"message":""}`)) + `"}`
			require.Len(t, args, tc.size)
			_, err := ch.CallTool(context.Background(), call("echo", args, nil))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			se := structuredErr(t, err)
			assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
			assert.Equal(t, map[string]any{"limit": "maxPayloadBytes", "maxPayloadBytes": limit, "payloadBytes": tc.size}, se.Details)
		})
	}
	// UTF-8 bytes, not characters: 5 two-byte characters are 10 bytes.
	args := `{"message":"` + strings.Repeat("é", 5) + `"}` // 14 + 10 = 24 bytes, 19 characters
	_, err := ch.CallTool(context.Background(), call("echo", args, nil))
	assert.Equal(t, mcp.ErrResourceExhausted, structuredErr(t, err).Code)
	// No limit.
	_, err = New(tt.reg, PayloadLimit(0)).CallTool(context.Background(), call("echo", args, nil))
	assert.NoError(t, err)
}

func TestLookupStopsUnknownToolEarly(t *testing.T) {
	tt := newTestTools(t)
	var rec recorder
	ch := New(tt.reg, Lookup(), rec.stage("inner"))
	_, err := ch.CallTool(context.Background(), call("missing", `{}`, nil))
	assert.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeInvalidParams})
	assert.Equal(t, mcp.ErrNotFound, structuredErr(t, err).Code)
	assert.Empty(t, rec.String(), "stages after Lookup do not run")
	// Without Lookup, Dispatch reports the same error.
	_, err = New(tt.reg).CallTool(context.Background(), call("missing", `{}`, nil))
	assert.Equal(t, mcp.ErrNotFound, structuredErr(t, err).Code)
}

func TestValidateStopsBeforeHandler(t *testing.T) {
	tt := newTestTools(t)
	var rec recorder
	ch := New(tt.reg, Validate(), rec.stage("inner"))
	_, err := ch.CallTool(context.Background(), call("echo", `{"message":42}`, nil))
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.Empty(t, rec.String())

	var validated bool
	probe := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			validated = c.Validated()
			return next(ctx, c)
		}
	}
	_, err = New(tt.reg, Validate(), probe).CallTool(context.Background(), call("echo", `{"message":"ok"}`, nil))
	require.NoError(t, err)
	assert.True(t, validated)
}

func TestConcurrencyRejectsWhenFull(t *testing.T) {
	resetExhausted()
	tt := newTestTools(t)
	lim := NewLimiter(2)
	ch := New(tt.reg, lim.Middleware())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ch.CallTool(context.Background(), call("block", `{}`, nil))
			assert.NoError(t, err)
		}()
	}
	<-tt.started
	<-tt.started
	assert.Equal(t, 2, lim.InUse())
	_, err := ch.CallTool(context.Background(), call("echo", `{"message":"x"}`, nil))
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.Equal(t, "maxConcurrentExecutions", se.Details["limit"])
	assert.EqualValues(t, 2, se.Details["maxConcurrentExecutions"])
	assert.EqualValues(t, 1, ResourceExhaustedCount())
	close(tt.release)
	wg.Wait()
	assert.Equal(t, 0, lim.InUse())
	assert.EqualValues(t, 0, ResourceExhaustedCount(), "a completion that is not RESOURCE_EXHAUSTED resets the counter")
	_, err = ch.CallTool(context.Background(), call("echo", `{"message":"x"}`, nil))
	assert.NoError(t, err)
}

func TestLimiterUnlimitedAndMisuse(t *testing.T) {
	lim := NewLimiter(0)
	for range 100 {
		require.True(t, lim.TryAcquire())
	}
	assert.Equal(t, 100, lim.InUse())
	assert.Equal(t, 0, lim.Max())
	for range 100 {
		lim.Release()
	}
	assert.Panics(t, func() { lim.Release() })
}

// A Serial tool's lock is held until the handler really returns: after a
// TIMEOUT answered at the deadline, a second call of the tool waits for the
// lock while the first handler runs on, and enters once it returns.
func TestLockHeldUntilHandlerReturnsAfterTimeout(t *testing.T) {
	tt := newTestTools(t)
	defer tt.free()
	ch := New(tt.reg, Lock(nil), Timeout(10*time.Millisecond))
	start := time.Now()
	_, err := ch.CallTool(t.Context(), call("serial", `{}`, nil))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	assert.Less(t, time.Since(start), time.Second, "the chain returned at the deadline")
	<-tt.started // the first handler runs on, holding the lock

	second := make(chan error, 1)
	go func() {
		_, err := ch.CallTool(context.Background(), call("serial", `{}`, nil))
		second <- err
	}()
	select {
	case <-tt.started:
		t.Fatal("the second call entered its handler while the first handler still held the lock")
	case <-time.After(50 * time.Millisecond):
	}
	tt.release <- struct{}{} // the first handler returns: the lock is released
	select {
	case <-tt.started: // the second entered
	case <-time.After(waitLimit):
		t.Fatal("the lock was not released when the handler returned")
	}
	time.Sleep(30 * time.Millisecond) // past the second call's deadline
	tt.free()
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, <-second).Code)
}

// Outside a Server too, Timeout returns TIMEOUT at the deadline, while the
// handler may run on; what it returns later is logged.
func TestTimeoutWithoutServerReturnsAtTheDeadline(t *testing.T) {
	for _, tool := range []string{"block", "cooperate"} {
		t.Run(tool, func(t *testing.T) {
			tt := newTestTools(t)
			defer tt.free()
			var logs exampletest.SafeBuffer
			ch := New(tt.reg, Timeout(5*time.Millisecond))
			done := make(chan error, 1)
			go func() {
				_, err := ch.CallTool(context.Background(), call(tool, `{}`, &logs))
				done <- err
			}()
			<-tt.started
			err := <-done // block still waits for its release
			assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
			tt.free()
			assert.Eventually(t, func() bool { return strings.Contains(logs.String(), "returned after its deadline") }, waitLimit, time.Millisecond)
		})
	}
}

func TestTimeoutPerToolOverrideAndInTime(t *testing.T) {
	tt := newTestTools(t)
	registerRaw(t, tt, "quick", 5*time.Millisecond, func(ctx context.Context) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ch := New(tt.reg, Timeout(time.Hour))
	start := time.Now()
	_, err := ch.CallTool(context.Background(), call("quick", `{}`, nil))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	assert.Less(t, time.Since(start), time.Minute, "the per-tool timeout applies")

	res, err := ch.CallTool(context.Background(), call("echo", `{"message":"fast"}`, nil))
	require.NoError(t, err)
	assert.Equal(t, "fast", res.Content[0].Text)

	// No default and no per-tool timeout: no deadline at all.
	var hasDeadline bool
	registerRaw(t, tt, "nodeadline", 0, func(ctx context.Context) (*mcp.CallToolResult, error) {
		_, hasDeadline = ctx.Deadline()
		return mcp.TextResult("ok"), nil
	})
	_, err = New(tt.reg, Timeout(0)).CallTool(context.Background(), call("nodeadline", `{}`, nil))
	require.NoError(t, err)
	assert.False(t, hasDeadline)
}

func registerRaw(t *testing.T, tt *testTools, name string, timeout time.Duration, h func(ctx context.Context) (*mcp.CallToolResult, error)) {
	t.Helper()
	require.NoError(t, tt.reg.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			return h(ctx)
		},
		&registry.ToolOptions{Timeout: timeout}))
}

func TestLockSerializesSerialTools(t *testing.T) {
	tt := newTestTools(t)
	ch := New(tt.reg, Lock(nil))
	var wg sync.WaitGroup
	results := make(chan string, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := ch.CallTool(context.Background(), call("serial", `{}`, nil))
			if assert.NoError(t, err) {
				results <- res.Content[0].Text
			}
		}()
	}
	<-tt.started // the first call is in its handler
	select {
	case <-tt.started:
		t.Fatal("a second call of a Serial tool entered its handler while the first ran")
	case <-time.After(20 * time.Millisecond):
	}
	tt.release <- struct{}{} // let the first finish
	<-tt.started             // now the second enters
	tt.release <- struct{}{}
	wg.Wait()
	assert.Len(t, results, 2)
}

func TestLockLeavesOtherToolsConcurrent(t *testing.T) {
	tt := newTestTools(t)
	for _, tc := range []struct {
		name   string
		opts   *LockOptions
		serial bool
	}{
		{"default", nil, false},
		{"all", &LockOptions{All: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var active, peak atomic.Int32
			registerRaw(t, tt, "count_"+tc.name, 0, func(ctx context.Context) (*mcp.CallToolResult, error) {
				n := active.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(2 * time.Millisecond)
				active.Add(-1)
				return mcp.TextResult("ok"), nil
			})
			ch := New(tt.reg, Lock(tc.opts))
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := ch.CallTool(context.Background(), call("count_"+tc.name, `{}`, nil))
					assert.NoError(t, err)
				}()
			}
			wg.Wait()
			if tc.serial {
				assert.Equal(t, int32(1), peak.Load())
			} else {
				assert.Greater(t, peak.Load(), int32(1))
			}
		})
	}
}

func TestLockWaitEndsWithContext(t *testing.T) {
	tt := newTestTools(t)
	ch := New(tt.reg, Lock(nil))
	first := make(chan struct{})
	go func() {
		defer close(first)
		_, _ = ch.CallTool(context.Background(), call("serial", `{}`, nil))
	}()
	<-tt.started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	_, err := ch.CallTool(ctx, call("serial", `{}`, nil))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = ch.CallTool(ctx, call("serial", `{}`, nil))
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.Equal(t, "cancelled", se.Details["reason"])
	close(tt.release)
	<-first
}
