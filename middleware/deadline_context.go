package middleware

import (
	"context"
	"sync"
	"time"
)

// deadlineContext is the context of a call under a context deadline (see
// Timeout): its parent's values and cancellation, and a deadline. The
// timer and the registration with the parent that a context made by
// context.WithDeadline costs are made only when somebody asks for Done
// (or derives a context that must end with it): a quick handler that
// never waits on its context costs one allocation and no timer.
//
// Until then, Err works the deadline and the parent's end out itself;
// once Done was asked for, everything is the armed context's (armed),
// which context.WithDeadline made with the same parent and instant, so
// both agree on what ended it and when.
type deadlineContext struct {
	parent context.Context
	at     time.Time

	mu     sync.Mutex
	armed  context.Context // nil until Done or AfterFunc
	cancel context.CancelFunc
	err    error // the end seen before arming (or at release), else nil
}

// Deadline returns the call's deadline.
func (c *deadlineContext) Deadline() (time.Time, bool) { return c.at, true }

// Value returns the parent's value for key.
func (c *deadlineContext) Value(key any) any { return c.parent.Value(key) }

// String names the context (fmt of a context prints it).
func (c *deadlineContext) String() string { return "middleware.deadlineContext" }

// arm returns the armed context, making it on first use; c.mu is held.
// One made after the context ended (see ended) has ended already, with
// the same error, and nothing can change it: an error Err returned stays.
func (c *deadlineContext) arm() context.Context {
	if c.armed != nil {
		return c.armed
	}
	if err := c.ended(); err != nil {
		ctx, cancel := context.WithCancel(context.WithoutCancel(c.parent))
		cancel()
		c.armed, c.cancel = endedContext{ctx, err}, cancel
		return c.armed
	}
	// Not ended: the parent's end comes first, then the deadline's, as in
	// ended.
	c.armed, c.cancel = context.WithDeadline(c.parent, c.at)
	return c.armed
}

// endedContext is a context that has ended with err: its Done channel is
// closed, and the contexts derived from it end at once with err.
type endedContext struct {
	context.Context // cancelled already
	err             error
}

func (e endedContext) Err() error { return e.err }

// ended returns why the unarmed context has ended, or nil: the end it
// recorded, else the parent's, else the deadline's; c.mu is held.
func (c *deadlineContext) ended() error {
	if c.err == nil {
		if err := c.parent.Err(); err != nil {
			c.err = err
		} else if !time.Now().Before(c.at) {
			c.err = context.DeadlineExceeded
		}
	}
	return c.err
}

// Done returns a channel closed when the deadline passes, the parent ends
// or the call returns, whichever comes first.
func (c *deadlineContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.arm().Done()
}

// Err returns nil while the context lives, then why it ended:
// context.DeadlineExceeded, the parent's error, or context.Canceled once
// the call has returned.
func (c *deadlineContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.armed != nil {
		return c.armed.Err()
	}
	return c.ended()
}

// AfterFunc arranges for f to run in its own goroutine once the context
// ends, as context.AfterFunc does. A context derived from this one
// (context.WithCancel, say) registers through it rather than starting a
// goroutine that waits for Done.
func (c *deadlineContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return context.AfterFunc(c.arm(), f)
}

// release ends the context when the call returns: an armed context is
// cancelled (its timer stopped, its parent told), an unarmed one ends
// with end (the caller's error or context.DeadlineExceeded, as the
// caller found them), or context.Canceled when end is nil, unless it had
// ended already.
func (c *deadlineContext) release(end error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.armed != nil:
		c.cancel()
	case c.err != nil:
	case end != nil:
		c.err = end
	default:
		c.err = context.Canceled
	}
}
