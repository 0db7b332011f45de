package aacp

import (
	"math"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// RetryPolicy says how often and how soon work is tried again: attempts,
// exponential backoff with its bounds, and which errors are retried. A Node
// applies it twice: to handler executions that fail with an error ShouldRetry
// accepts (at the receiver, after the deduplication check), and to deliveries
// that are not acknowledged (the ledger's NextRetryAt). Delays grow
// exponentially from BaseDelay by Multiplier up to MaxDelay; Jitter randomizes
// them.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts, the first one included (0: 5).
	MaxAttempts int
	// BaseDelay is the delay after the first attempt (0: 100ms).
	BaseDelay time.Duration
	// MaxDelay caps every delay (0: 30s).
	MaxDelay time.Duration
	// Multiplier is the growth factor of consecutive delays (< 1: 2).
	Multiplier float64
	// Jitter, between 0 and 1, is the largest fraction by which a delay is
	// shortened at random (0: none), so that retries of many messages do
	// not fire together.
	Jitter float64
	// ShouldRetry reports whether a failed execution may be retried (nil:
	// DefaultShouldRetry).
	ShouldRetry func(*mcp.StructuredError) bool
}

// DefaultRetryPolicy returns the policy a Node uses when given none: 5
// attempts, 100ms doubling up to 30s, 20% jitter, DefaultShouldRetry.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: 30 * time.Second,
		Multiplier: 2, Jitter: 0.2, ShouldRetry: DefaultShouldRetry}
}

// DefaultShouldRetry retries the transient codes TIMEOUT,
// RESOURCE_EXHAUSTED and UNAVAILABLE.
func DefaultShouldRetry(se *mcp.StructuredError) bool {
	if se == nil {
		return false
	}
	switch se.Code {
	case mcp.ErrTimeout, mcp.ErrResourceExhausted, CodeUnavailable:
		return true
	}
	return false
}

// withDefaults returns p with its zero members replaced by the defaults.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = d.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	if p.Multiplier < 1 {
		p.Multiplier = d.Multiplier
	}
	p.Jitter = min(max(p.Jitter, 0), 1)
	if p.ShouldRetry == nil {
		p.ShouldRetry = DefaultShouldRetry
	}
	return p
}

// Backoff returns the delay after the attempt-th attempt (attempt >= 1):
// BaseDelay × Multiplier^(attempt-1), at most MaxDelay, shortened by
// Jitter × r (r in [0, 1), a random number; 0 gives the full delay).
func (p RetryPolicy) Backoff(attempt int, r float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	base, maxDelay, mult := p.BaseDelay, p.MaxDelay, p.Multiplier
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	if maxDelay < base {
		maxDelay = base
	}
	if mult < 1 {
		mult = 2
	}
	d := float64(base) * math.Pow(mult, float64(attempt-1))
	if d > float64(maxDelay) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(maxDelay)
	}
	if j := min(max(p.Jitter, 0), 1); j > 0 {
		d *= 1 - j*min(max(r, 0), 1)
	}
	return time.Duration(d)
}

// Clock tells the time. Nodes take one so tests can control time; the
// default is the system clock.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the Clock of the system's time.
var SystemClock Clock = systemClock{}
