package middleware

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/keelmcp/keel/mcp"
)

// Limiter bounds how many tool calls execute at once: seed 000's concurrency
// slots. Its Middleware stage takes a slot before the rest of the chain runs
// and gives it back only when the rest of the chain returns, which is when
// the tool's handler returns, even if Timeout has already answered TIMEOUT.
// InUse and Max feed the health tool. A Limiter is safe for concurrent use.
type Limiter struct {
	max   int64
	inUse atomic.Int64
}

// NewLimiter returns a Limiter with max slots; max <= 0 means unlimited (the
// stage still counts executions).
func NewLimiter(max int) *Limiter { return &Limiter{max: int64(max)} }

// Max returns the number of slots (0 = unlimited).
func (l *Limiter) Max() int { return int(l.max) }

// InUse returns the number of slots taken now: calls whose handlers have not
// yet returned.
func (l *Limiter) InUse() int { return int(l.inUse.Load()) }

// TryAcquire takes a slot if one is free and reports whether it did. Each
// successful TryAcquire must be paired with one Release.
func (l *Limiter) TryAcquire() bool {
	for {
		n := l.inUse.Load()
		if l.max > 0 && n >= l.max {
			return false
		}
		if l.inUse.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives back a slot taken by TryAcquire.
func (l *Limiter) Release() {
	if l.inUse.Add(-1) < 0 {
		panic("middleware: Limiter.Release without a matching TryAcquire")
	}
}

// Middleware returns the stage: a call that finds no free slot is rejected
// at once with a RESOURCE_EXHAUSTED tool error with details {"limit":
// "maxConcurrentExecutions", "maxConcurrentExecutions": max,
// "concurrentExecutions": n}.
func (l *Limiter) Middleware() Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			if !l.TryAcquire() {
				return nil, c.toolError(mcp.ErrResourceExhausted,
					"too many concurrent tool executions (maxConcurrentExecutions is "+strconv.FormatInt(l.max, 10)+")",
					map[string]any{"limit": "maxConcurrentExecutions", "maxConcurrentExecutions": l.max, "concurrentExecutions": l.inUse.Load()})
			}
			defer l.Release()
			return next(ctx, c)
		}
	}
}

// Concurrency returns a stage allowing at most max calls to execute at once
// (see Limiter; use NewLimiter directly to read its counters, for example for
// the health tool).
func Concurrency(max int) Middleware { return NewLimiter(max).Middleware() }
