package middleware

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
)

// goid returns the calling goroutine's id, read from its stack header.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	b = b[:bytes.IndexByte(b, ' ')]
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}

// onGoroutine records the goroutine each call of the chain starts on.
func onGoroutine(ids chan<- uint64) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			ids <- goid()
			return next(ctx, c)
		}
	}
}

// Under Deadline, a handler that honours its context runs on the caller's
// goroutine, sees the deadline, and returns at it; the answer is TIMEOUT,
// with the call's ids.
func TestDeadlineEndsTheHandlersContextOnTheCallersGoroutine(t *testing.T) {
	tt := newTestTools(t)
	ids := make(chan uint64, 1)
	var handlerID uint64
	var handlerErr error
	registerRaw(t, tt, "wait", 0, func(ctx context.Context) (*mcp.CallToolResult, error) {
		handlerID = goid()
		<-ctx.Done()
		handlerErr = ctx.Err()
		return nil, ctx.Err()
	})
	ch := New(tt.reg, onGoroutine(ids), Deadline(20*time.Millisecond))
	start := time.Now()
	_, err := ch.CallTool(context.Background(), call("wait", `{}`, nil))
	took := time.Since(start)
	se := structuredErr(t, err)
	assert.Equal(t, mcp.ErrTimeout, se.Code)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.EqualValues(t, 20, se.Details["timeoutMs"])
	assert.GreaterOrEqual(t, took, 20*time.Millisecond, "never before the deadline")
	assert.Less(t, took, time.Second)
	assert.ErrorIs(t, handlerErr, context.DeadlineExceeded)
	assert.Equal(t, <-ids, handlerID, "the handler ran on the caller's goroutine")
}

// Under Deadline, a handler that ignores its context is answered when it
// returns, TIMEOUT still, and the chain returns then too (the middleware
// outside sees what the client sees); its result is logged, and the audit
// records a late completion.
func TestDeadlineAnswersAnIgnoringHandlerWhenItReturns(t *testing.T) {
	tt := newTestTools(t)
	registerRaw(t, tt, "sleepy", 0, func(context.Context) (*mcp.CallToolResult, error) {
		time.Sleep(60 * time.Millisecond) // ignores its context
		return mcp.TextResult("late"), nil
	})
	sink := &memSink{}
	lim := NewLimiter(2)
	ch := Standard(tt.reg, &StandardOptions{AuditSink: sink, Limiter: lim, DefaultTimeout: 10 * time.Millisecond})
	var logs exampletest.SafeBuffer
	start := time.Now()
	res, err := ch.CallTool(context.Background(), call("sleepy", `{}`, &logs))
	took := time.Since(start)
	assert.Nil(t, res)
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code, "the deadline had passed: TIMEOUT, whatever the handler returned")
	assert.GreaterOrEqual(t, took, 60*time.Millisecond, "answered when the handler returned")
	assert.Contains(t, logs.String(), "returned after its deadline")
	assert.Equal(t, 0, lim.InUse(), "nothing runs on: the slot is free when the chain returns")
	_, exits := sink.events()
	require.Len(t, exits, 1)
	assert.Equal(t, OutcomeLateCompleted, exits[0].Outcome)
	require.NotNil(t, exits[0].Result)
	assert.Equal(t, "late", exits[0].Result.Content[0].Text, "the audit records what the handler returned")
}

// A handler that returns a value as soon as its context ends never beats
// the deadline under Deadline either.
func TestDeadlineValueAtCancellationIsTimeout(t *testing.T) {
	tt := newTestTools(t)
	registerRaw(t, tt, "quick-on-cancel", 0, func(ctx context.Context) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return mcp.TextResult("a value, not an error"), nil
	})
	ch := New(tt.reg, Deadline(2*time.Millisecond))
	for i := range 10 {
		res, err := ch.CallTool(context.Background(), call("quick-on-cancel", `{}`, nil))
		assert.Nil(t, res, "run %d", i)
		assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code, "run %d", i)
	}
}

// Deadline leaves a tool with its own Timeout to the Timeout stage (whose
// deadline answers at once while the handler runs on), calls run as tasks
// to their task, a caller's earlier deadline to the caller, and a call that
// returns in time alone.
func TestDeadlineScope(t *testing.T) {
	tt := newTestTools(t)
	defer tt.free()
	seen := make(chan time.Time, 4)
	deadlineOf := func(ctx context.Context) (*mcp.CallToolResult, error) {
		dl, _ := ctx.Deadline() // zero: none
		seen <- dl
		return mcp.TextResult("ok"), nil
	}
	registerRaw(t, tt, "own-hour", time.Hour, deadlineOf)
	registerRaw(t, tt, "default", 0, deadlineOf)
	registerRaw(t, tt, "own-strict", 10*time.Millisecond, func(context.Context) (*mcp.CallToolResult, error) {
		<-tt.release
		return mcp.TextResult("late"), nil
	})
	ch := Standard(tt.reg, &StandardOptions{DefaultTimeout: time.Minute})

	start := time.Now()
	_, err := ch.CallTool(context.Background(), call("own-hour", `{}`, nil))
	require.NoError(t, err)
	assert.Greater(t, (<-seen).Sub(start), 59*time.Minute, "the tool's own Timeout, not the default")

	_, err = ch.CallTool(context.Background(), call("default", `{}`, nil))
	require.NoError(t, err)
	dl := (<-seen).Sub(start)
	assert.Greater(t, dl, 59*time.Second)
	assert.LessOrEqual(t, dl, time.Minute+time.Second, "the default")

	caller, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	callerDL, _ := caller.Deadline()
	_, err = ch.CallTool(caller, call("default", `{}`, nil))
	require.NoError(t, err)
	assert.Equal(t, callerDL, <-seen, "the caller's earlier deadline stays the handler's")

	start = time.Now()
	_, err = ch.CallTool(context.Background(), call("own-strict", `{}`, nil))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	assert.Less(t, time.Since(start), time.Second, "the tool's own Timeout answers at once while the handler runs on")

	tc := call("default", `{}`, nil)
	tc.Task = &mcp.TaskMetadata{}
	_, err = New(tt.reg, Deadline(time.Millisecond)).CallTool(context.Background(), tc)
	require.NoError(t, err)
	assert.Zero(t, <-seen, "a task is bounded by its task, not by the default")
}

// A panic under Deadline is raised again as it is before the deadline
// (Recover makes it INTERNAL); after the deadline it is logged with its
// stack and the answer is TIMEOUT.
func TestDeadlinePanics(t *testing.T) {
	tt := newTestTools(t)
	registerRaw(t, tt, "panic-now", 0, func(context.Context) (*mcp.CallToolResult, error) { panic("boom now") })
	registerRaw(t, tt, "panic-late", 0, func(ctx context.Context) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		panic("boom late")
	})
	ch := New(tt.reg, Recover(), Deadline(5*time.Millisecond))
	var logs exampletest.SafeBuffer
	_, err := ch.CallTool(context.Background(), call("panic-now", `{}`, &logs))
	assert.Equal(t, mcp.ErrInternal, structuredErr(t, err).Code)
	assert.Contains(t, logs.String(), "boom now")

	logs = exampletest.SafeBuffer{}
	_, err = ch.CallTool(context.Background(), call("panic-late", `{}`, &logs))
	assert.Equal(t, mcp.ErrTimeout, structuredErr(t, err).Code)
	assert.Contains(t, logs.String(), "boom late")
	assert.Contains(t, logs.String(), "deadline_test.go", "the handler's stack is logged")
}

// deadlineContext behaves as the context.WithDeadline it stands for,
// whether or not anything armed it by asking for Done.
func TestDeadlineContext(t *testing.T) {
	never := func(*testing.T, *deadlineContext) {}
	done := func(t *testing.T, c *deadlineContext) { t.Helper(); _ = c.Done() }
	for _, arm := range []struct {
		name string
		f    func(*testing.T, *deadlineContext)
	}{{"unarmed", never}, {"armed", done}} {
		t.Run(arm.name, func(t *testing.T) {
			t.Run("lives until the deadline", func(t *testing.T) {
				at := time.Now().Add(30 * time.Millisecond)
				c := &deadlineContext{parent: context.Background(), at: at}
				arm.f(t, c)
				assert.NoError(t, c.Err())
				dl, ok := c.Deadline()
				assert.True(t, ok)
				assert.Equal(t, at, dl)
				select {
				case <-c.Done():
				case <-time.After(waitLimit):
					t.Fatal("Done was not closed at the deadline")
				}
				assert.False(t, time.Now().Before(at))
				assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
				assert.ErrorIs(t, context.Cause(c), context.DeadlineExceeded)
				c.release(nil)
				assert.ErrorIs(t, c.Err(), context.DeadlineExceeded, "the first end stays")
			})
			t.Run("ends with its parent", func(t *testing.T) {
				parent, cancel := context.WithCancel(context.WithValue(context.Background(), testKey{}, "v"))
				c := &deadlineContext{parent: parent, at: time.Now().Add(time.Hour)}
				arm.f(t, c)
				assert.Equal(t, "v", c.Value(testKey{}))
				cancel()
				select {
				case <-c.Done():
				case <-time.After(waitLimit):
					t.Fatal("Done was not closed with the parent")
				}
				assert.ErrorIs(t, c.Err(), context.Canceled)
			})
			t.Run("ends when released", func(t *testing.T) {
				at := time.Now().Add(20 * time.Millisecond)
				c := &deadlineContext{parent: context.Background(), at: at}
				arm.f(t, c)
				c.release(nil)
				<-c.Done()
				assert.ErrorIs(t, c.Err(), context.Canceled)
				time.Sleep(time.Until(at) + 5*time.Millisecond)
				assert.ErrorIs(t, c.Err(), context.Canceled, "released before the deadline: Canceled for good")
				<-c.Done()
			})
			t.Run("released late", func(t *testing.T) {
				c := &deadlineContext{parent: context.Background(), at: time.Now().Add(-time.Millisecond)}
				arm.f(t, c)
				c.release(context.DeadlineExceeded)
				assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
				<-c.Done()
				assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
			})
			t.Run("an end once seen stays", func(t *testing.T) {
				for _, end := range []struct {
					name string
					f    func(c *deadlineContext)
				}{
					{"seen by Err", func(c *deadlineContext) { assert.ErrorIs(t, c.Err(), context.DeadlineExceeded) }},
					{"released late", func(c *deadlineContext) { c.release(context.DeadlineExceeded) }},
				} {
					parent, cancel := context.WithCancel(context.Background())
					c := &deadlineContext{parent: parent, at: time.Now().Add(5 * time.Millisecond)}
					arm.f(t, c)
					time.Sleep(10 * time.Millisecond)
					if arm.name == "armed" {
						<-c.Done()
					}
					end.f(c)
					cancel() // the caller ends after the deadline: the deadline's end stays
					<-c.Done()
					assert.ErrorIs(t, c.Err(), context.DeadlineExceeded, end.name)
					child, cancelChild := context.WithCancel(c)
					<-child.Done()
					assert.ErrorIs(t, child.Err(), context.DeadlineExceeded, end.name)
					cancelChild()
				}
			})
			t.Run("derived contexts end with it", func(t *testing.T) {
				c := &deadlineContext{parent: context.Background(), at: time.Now().Add(20 * time.Millisecond)}
				arm.f(t, c)
				before := runtime.NumGoroutine()
				var children []context.Context
				for range 50 {
					child, cancel := context.WithCancel(c)
					defer cancel()
					children = append(children, child)
				}
				assert.Less(t, runtime.NumGoroutine()-before, 10, "derived contexts register through AfterFunc, not a goroutine each")
				for _, child := range children {
					select {
					case <-child.Done():
					case <-time.After(waitLimit):
						t.Fatal("a derived context outlived the deadline")
					}
					assert.ErrorIs(t, child.Err(), context.DeadlineExceeded)
				}
			})
		})
	}
}

// Many goroutines asking a deadlineContext for Done and Err at once (the
// race detector checks the rest) see one channel and one end.
func TestDeadlineContextConcurrentUse(t *testing.T) {
	c := &deadlineContext{parent: context.Background(), at: time.Now().Add(5 * time.Millisecond)}
	var wg sync.WaitGroup
	chans := make([]<-chan struct{}, 16)
	for i := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Err()
			chans[i] = c.Done()
			<-chans[i]
		}()
	}
	wg.Wait()
	for _, ch := range chans {
		assert.Equal(t, chans[0], ch)
	}
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	c.release(nil)
	assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
}

type testKey struct{}
