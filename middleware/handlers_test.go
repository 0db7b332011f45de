package middleware

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// startRun hands a run of next to p, as runWithDeadline does, and returns
// its done channel.
func startRun(p *handlerPool, next func()) (*deadlineRun, chan struct{}) {
	r := deadlineRuns.Get().(*deadlineRun)
	r.c = &Call{ToolCall: &mcp.ToolCall{Name: "t"}}
	r.next = func(context.Context, *Call) (*mcp.CallToolResult, error) { next(); return nil, nil }
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.refs.Store(2)
	done := r.done
	p.start(r)
	return r, done
}

// finishRun waits for r's handler and lets go of r, as the caller does.
func finishRun(r *deadlineRun, done chan struct{}) {
	<-done
	r.cancel()
	r.release()
}

func idleWorkers(p *handlerPool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// The pool's workers are bounded and owned: a worker that finds
// maxIdleWorkers waiting ends at once, sequential calls reuse one worker,
// and the reaper ends every worker that stayed idle for a whole period.
func TestHandlerPoolBoundsAndEndsItsWorkers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		concurrent int // runs in flight at once
		wantIdle   int // workers waiting once they all returned
	}{
		{"sequential calls reuse one worker", 1, 1},
		{"a burst leaves its workers waiting", 20, 20},
		{"idle workers are bounded", maxIdleWorkers + 40, maxIdleWorkers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &handlerPool{}
			before := runtime.NumGoroutine()
			for range 3 { // rounds: the workers of a round serve the next
				release := make(chan struct{})
				var started sync.WaitGroup
				started.Add(tc.concurrent)
				type run struct {
					r    *deadlineRun
					done chan struct{}
				}
				runs := make([]run, tc.concurrent)
				for i := range runs {
					runs[i].r, runs[i].done = startRun(p, func() { started.Done(); <-release })
				}
				started.Wait() // all in flight at once: one worker each
				close(release)
				for _, r := range runs {
					finishRun(r.r, r.done)
				}
				require.Eventually(t, func() bool { return idleWorkers(p) == tc.wantIdle }, 5*time.Second, time.Millisecond)
			}
			assert.LessOrEqual(t, runtime.NumGoroutine(), before+tc.wantIdle+2, "no more workers than wait")

			p.reap() // marks them
			assert.Equal(t, tc.wantIdle, idleWorkers(p), "a worker is ended only after a whole idle period")
			p.reap() // ends them
			assert.Zero(t, idleWorkers(p))
			assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+2 }, 5*time.Second, time.Millisecond,
				"the reaped workers ended")
			p.mu.Lock()
			p.reaper.Stop()
			p.mu.Unlock()
		})
	}
}

// A worker that was handed a run since the reaper's last pass is not
// ended by its next pass.
func TestHandlerPoolKeepsABusyWorker(t *testing.T) {
	p := &handlerPool{}
	r, done := startRun(p, func() {})
	finishRun(r, done)
	require.Eventually(t, func() bool { return idleWorkers(p) == 1 }, 5*time.Second, time.Millisecond)
	p.reap() // marks it
	r, done = startRun(p, func() {})
	finishRun(r, done)
	require.Eventually(t, func() bool { return idleWorkers(p) == 1 }, 5*time.Second, time.Millisecond)
	p.reap()
	assert.Equal(t, 1, idleWorkers(p), "used since the last pass: kept")
	p.reap()
	assert.Zero(t, idleWorkers(p))
	p.mu.Lock()
	p.reaper.Stop()
	p.mu.Unlock()
}

// await is bounded by its window and by a count of polls, yields the
// processor between polls (a goroutine made runnable on the same
// processor sends within them), and leaves the channel's value for the
// caller to read.
func TestAwaitBoundsAndYields(t *testing.T) {
	t.Run("a value sent already is read at once", func(t *testing.T) {
		ch := make(chan int, 1)
		ch <- 7
		v, ok := await(ch, time.Millisecond)
		assert.True(t, ok)
		assert.Equal(t, 7, v)
		assert.Empty(t, ch)
	})
	for _, tc := range []struct {
		name   string
		window time.Duration
	}{
		{"nothing sent: it gives up after the window", time.Millisecond},
		{"nothing sent and no end of window: the count bounds it", time.Hour},
		{"a window <= 0 gives up at once", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := make(chan int, 1)
			start := time.Now()
			_, ok := await(ch, tc.window)
			assert.False(t, ok)
			assert.Less(t, time.Since(start), 5*time.Second)
			ch <- 1 // the caller parks on it next
			assert.Equal(t, 1, <-ch)
		})
	}
	t.Run("on one processor the sender runs while it awaits", func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		for range 100 {
			ch := make(chan int, 1)
			go func() { ch <- 1 }()
			// Polling without yielding would use up its polls before the
			// sender, on the only processor, could run.
			_, ok := await(ch, time.Hour)
			require.True(t, ok)
		}
	})
}

// After a call whose handler outlasted the window, the next awaitSkips
// calls park at once; then calls await again.
func TestAwaitPolicySkipsAfterAMiss(t *testing.T) {
	var a awaitPolicy
	for range 3 {
		require.True(t, a.poll(), "no miss yet: await")
	}
	for round := range 2 {
		a.missed()
		for i := range awaitSkips {
			require.False(t, a.poll(), "round %d, call %d after the miss: park at once", round, i)
		}
		require.True(t, a.poll(), "round %d: the skips are used up", round)
		require.True(t, a.poll())
	}
}
