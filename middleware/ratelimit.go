package middleware

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// DefaultRateLimitClients is the default number of clients a RateLimiter
// keeps state for (RateLimitOptions.MaxClients).
const DefaultRateLimitClients = 10000

// Rate is a token-bucket rate: Calls calls per Per on average, in bursts
// of up to Burst calls. A bucket starts full (Burst tokens); each call
// takes a token; tokens come back at Calls per Per, never beyond Burst. The
// zero Rate means no limit.
type Rate struct {
	// Calls is the number of calls allowed per Per, sustained.
	Calls int
	// Per is the period of Calls (for example time.Second or time.Minute).
	Per time.Duration
	// Burst is the size of the bucket: how many calls may come at once
	// after a quiet period (0 = Calls).
	Burst int
}

// IsZero reports whether r is the zero Rate (no limit).
func (r Rate) IsZero() bool { return r == Rate{} }

func (r Rate) check(field string) error {
	if r.IsZero() {
		return nil
	}
	if r.Calls <= 0 || r.Per <= 0 || r.Burst < 0 {
		return fmt.Errorf("middleware: %s: a rate needs Calls > 0 and Per > 0, and Burst >= 0 (got Calls %d, Per %v, Burst %d)", field, r.Calls, r.Per, r.Burst)
	}
	return nil
}

// RateLimitOptions configure a RateLimiter. A zero PerClient and an empty
// PerTool limit nothing.
type RateLimitOptions struct {
	// PerClient is the rate of each client's calls, all tools together
	// (zero = none).
	PerClient Rate
	// PerTool holds rates for calls of single tools, by tool name: each
	// client has its own bucket per listed tool, on top of PerClient.
	PerTool map[string]Rate
	// ClientKey says which client a call comes from (nil =
	// DefaultClientKey). Calls whose key is "" are not rate-limited. Share
	// one function with StandardOptions.ClientKey (Standard does).
	ClientKey ClientKeyFunc
	// MaxClients bounds the number of clients whose buckets are kept (0 =
	// DefaultRateLimitClients). A client whose buckets have all filled up
	// again is idle and forgotten first (forgetting it changes nothing);
	// when the limit is reached and no client is idle, the least recently
	// seen one is forgotten: it starts again with full buckets.
	MaxClients int
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

// RateLimiter limits how often each client may call tools: a token bucket
// per client (RateLimitOptions.PerClient) and per client and tool
// (RateLimitOptions.PerTool). The same buckets bound each peer
// (mcp.PeerFromContext) however its calls are split into clients (see
// ClientKeyFunc): a call takes a token of its peer's buckets and, when its
// client key is finer, of its client's. A call without a token in every bucket it
// needs is refused at once with a RATE_LIMITED tool error, retryable, whose
// details say when to come back:
//
//	{"limit": "rateLimit" or "toolRateLimit", "tool": name (toolRateLimit),
//	 "retryAfterMs": ms, "calls": n, "perMs": ms, "burst": b}
//
// A refused call takes no token. Memory is bounded: at most MaxClients
// clients are tracked (see RateLimitOptions.MaxClients). A RateLimiter is
// safe for concurrent use; one limiter may serve several chains.
type RateLimiter struct {
	perClient  bucketRate
	perTool    map[string]bucketRate
	key        ClientKeyFunc
	maxClients int
	now        func() time.Time

	mu      sync.Mutex
	clients map[string]*list.Element // of *rateClient
	lru     list.List                // *rateClient, most recently seen first
}

// bucketRate is a Rate as the buckets use it.
type bucketRate struct {
	Rate
	perNs float64 // tokens per nanosecond
	burst float64
}

func compileRate(r Rate) bucketRate {
	if r.IsZero() {
		return bucketRate{}
	}
	b := r.Burst
	if b == 0 {
		b = r.Calls
	}
	r.Burst = b
	return bucketRate{Rate: r, perNs: float64(r.Calls) / float64(r.Per.Nanoseconds()), burst: float64(b)}
}

func (r bucketRate) on() bool { return r.perNs > 0 }

// bucket is one token bucket: tokens at time last.
type bucket struct {
	tokens float64
	last   time.Time
}

// level returns the tokens at now.
func (b *bucket) level(r bucketRate, now time.Time) float64 {
	el := now.Sub(b.last)
	if el <= 0 {
		return b.tokens
	}
	return math.Min(r.burst, b.tokens+float64(el)*r.perNs)
}

// wait returns how long until the bucket holds a token, given its level.
func wait(r bucketRate, level float64) time.Duration {
	return time.Duration(math.Ceil((1 - level) / r.perNs))
}

type rateClient struct {
	key   string
	all   bucket
	tools map[string]*bucket // tools with a PerTool rate this client called
}

// NewRateLimiter returns a RateLimiter configured by opts (nil = one that
// limits nothing). It fails on a rate that is not valid (see Rate).
func NewRateLimiter(opts *RateLimitOptions) (*RateLimiter, error) {
	var o RateLimitOptions
	if opts != nil {
		o = *opts
	}
	errs := []error{o.PerClient.check("RateLimitOptions.PerClient")}
	l := &RateLimiter{perClient: compileRate(o.PerClient), key: o.ClientKey, maxClients: o.MaxClients, now: o.Now,
		clients: map[string]*list.Element{}}
	for name, r := range o.PerTool {
		errs = append(errs, r.check("RateLimitOptions.PerTool["+quote(name)+"]"))
		if !r.IsZero() {
			if l.perTool == nil {
				l.perTool = map[string]bucketRate{}
			}
			l.perTool[name] = compileRate(r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.MaxClients < 0 {
		return nil, fmt.Errorf("middleware: RateLimitOptions.MaxClients is %d; it must be >= 0", o.MaxClients)
	}
	if l.maxClients == 0 {
		l.maxClients = DefaultRateLimitClients
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l, nil
}

// RateLimit returns the stage of a new RateLimiter configured by opts. It
// panics if opts are not valid (see NewRateLimiter): rates are part of the
// program, not input.
func RateLimit(opts *RateLimitOptions) Middleware {
	l, err := NewRateLimiter(opts)
	if err != nil {
		panic(err)
	}
	return l.Middleware()
}

// Clients returns the number of clients whose buckets are kept now.
func (l *RateLimiter) Clients() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// Middleware returns the stage (see RateLimiter). Standard places it
// right after the admission checks, before a concurrency slot is taken.
func (l *RateLimiter) Middleware() Middleware {
	return func(next Handler) Handler {
		if !l.perClient.on() && len(l.perTool) == 0 {
			return next
		}
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			tr, limited := l.perTool[c.Name]
			if !l.perClient.on() && !limited {
				return next(ctx, c)
			}
			peer, client := shareKeys(l.key, ctx, c)
			if peer == "" && client == "" {
				return next(ctx, c)
			}
			if d, which := l.take([2]string{peer, client}, c.Name, tr, limited); d > 0 {
				return nil, l.refusal(c, d, which)
			}
			return next(ctx, c)
		}
	}
}

// take takes a token for the call of tool from every bucket it needs, of
// each of keys (its peer and its client key; "" = none), or none; it
// returns 0, or how long until every bucket holds a token and the rate
// that refused (the per-tool rate when both do).
func (l *RateLimiter) take(keys [2]string, tool string, tr bucketRate, limited bool) (time.Duration, *bucketRate) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	type levels struct {
		rc      *rateClient
		tb      *bucket
		all, tl float64
	}
	var got [2]levels
	var d time.Duration
	var which *bucketRate
	for i, key := range keys {
		if key == "" {
			continue
		}
		g := &got[i]
		g.rc = l.client(key, now, got[0].rc)
		if limited {
			if g.tb = g.rc.tools[tool]; g.tb == nil {
				if g.rc.tools == nil {
					g.rc.tools = map[string]*bucket{}
				}
				g.tb = &bucket{tokens: tr.burst, last: now}
				g.rc.tools[tool] = g.tb
			}
		}
		if l.perClient.on() {
			if g.all = g.rc.all.level(l.perClient, now); g.all < 1 {
				if w := wait(l.perClient, g.all); w > d {
					d = w
				}
				if which == nil {
					which = &l.perClient
				}
			}
		}
		if limited {
			if g.tl = g.tb.level(tr, now); g.tl < 1 {
				if w := wait(tr, g.tl); w > d {
					d = w
				}
				which = &tr
			}
		}
	}
	if which != nil {
		return max(d, 1), which
	}
	for _, g := range got {
		if g.rc == nil {
			continue
		}
		if l.perClient.on() {
			g.rc.all = bucket{tokens: g.all - 1, last: now}
		}
		if limited {
			*g.tb = bucket{tokens: g.tl - 1, last: now}
		}
	}
	return 0, nil
}

// client returns key's state, made the most recently seen, creating it
// (with full buckets) if needed and forgetting others, except keep, to
// stay within maxClients. l.mu is held.
func (l *RateLimiter) client(key string, now time.Time, keep *rateClient) *rateClient {
	if e, ok := l.clients[key]; ok {
		l.lru.MoveToFront(e)
		return e.Value.(*rateClient)
	}
	// Forget up to two idle clients (whose buckets are full again: the
	// same as forgetting nothing), then the least recently seen if still
	// at the limit.
	for range 2 {
		e := l.lru.Back()
		if e == nil || e.Value == keep || !l.idle(e.Value.(*rateClient), now) {
			break
		}
		l.forget(e)
	}
	for len(l.clients) >= l.maxClients {
		e := l.lru.Back()
		if e.Value == keep { // the call's other state: forget the one before it
			if e = e.Prev(); e == nil {
				break // (MaxClients 1: both are kept for this call)
			}
		}
		l.forget(e)
	}
	rc := &rateClient{key: key, all: bucket{tokens: l.perClient.burst, last: now}}
	l.clients[key] = l.lru.PushFront(rc)
	return rc
}

func (l *RateLimiter) forget(e *list.Element) {
	delete(l.clients, e.Value.(*rateClient).key)
	l.lru.Remove(e)
}

// idle reports whether every bucket of rc is full at now.
func (l *RateLimiter) idle(rc *rateClient, now time.Time) bool {
	if l.perClient.on() && rc.all.level(l.perClient, now) < l.perClient.burst {
		return false
	}
	for tool, b := range rc.tools {
		if r := l.perTool[tool]; b.level(r, now) < r.burst {
			return false
		}
	}
	return true
}

// refusal is the RATE_LIMITED error of a call refused by rate r for d.
func (l *RateLimiter) refusal(c *Call, d time.Duration, r *bucketRate) *mcp.StructuredError {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	details := map[string]any{"limit": "rateLimit", "retryAfterMs": int64(ms),
		"calls": r.Calls, "perMs": r.Per.Milliseconds(), "burst": r.Burst}
	what := "rate limit"
	if r != &l.perClient {
		details["limit"], details["tool"] = "toolRateLimit", c.Name
		what = "rate limit of tool " + quote(c.Name)
	}
	return c.toolError(mcp.ErrRateLimited,
		what+" exceeded ("+strconv.Itoa(r.Calls)+" calls per "+r.Per.String()+", bursts of "+strconv.Itoa(r.Burst)+"); retry in "+strconv.FormatInt(int64(ms), 10)+"ms",
		details)
}
