package middleware

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/mcp"
)

// Limiter bounds how many tool calls execute at once: the concurrency
// slots, with a fair share per client. Its Middleware stage takes a slot
// before the rest of the chain runs and gives it back only when the rest of
// the chain returns, which is when the tool's handler returns, even if
// Timeout has already answered TIMEOUT. A call that finds no slot it may
// take fails at once with RESOURCE_EXHAUSTED; nothing waits.
//
// Fair share: besides the total, each client (see ClientKeyFunc) may hold
// at most PerClient slots at once, so that one client cannot take every
// slot and starve the others: a greedy client gets RESOURCE_EXHAUSTED for
// the calls over its share while a polite one still finds free slots. The
// share also bounds each peer (mcp.PeerFromContext), however its calls are
// split into clients: the names and sessions of one peer share one share.
//
// Calls that run as tasks take no slot: a call with mcp.ToolCall.Task set
// (a 2025-11-25 task-augmented call, or a 2026-07-28 call that may become a
// task) passes the stage untouched. Their handlers run in the Server's task
// pool instead, bounded by mcp.TaskOptions (MaxRunning, MaxRunningPerOwner,
// MaxRunTime), so a client that starts long tasks and goes away cannot hold
// the slots other clients' plain calls need.
//
// InUse and Max feed the health tool. A Limiter is safe for concurrent use.
type Limiter struct {
	max       int64
	perClient int64
	key       ClientKeyFunc
	inUse     atomic.Int64

	mu      sync.Mutex       // guards clients and peers
	clients map[string]int64 // slots held per client key finer than its peer; only keys holding one
	peers   map[string]int64 // slots held per peer key; only keys holding one
}

// LimiterOptions configure NewLimiterWith. Nil means all defaults.
type LimiterOptions struct {
	// Max is the number of slots (0 = DefaultMaxConcurrent; negative =
	// unlimited, and then there is no per-client share either).
	Max int
	// PerClient is the number of slots one client may hold at once (0 =
	// DefaultPerClientShare(Max): half of them, at least 1; negative = no
	// per-client share). A value above Max is Max.
	PerClient int
	// ClientKey says which client a call comes from (nil =
	// DefaultClientKey). Calls whose key is "" are not counted per client.
	ClientKey ClientKeyFunc
}

// DefaultPerClientShare returns the default number of slots one client may
// hold out of total slots: total/2, at least 1 (0 when total is
// unlimited, <= 0). With
// the default 10 slots, one client may hold 5.
func DefaultPerClientShare(total int) int {
	if total <= 0 {
		return 0
	}
	return max(1, total/2)
}

// NewLimiter returns a Limiter with max slots and the default per-client
// share (DefaultPerClientShare); max <= 0 means unlimited (the stage still
// counts executions).
func NewLimiter(max int) *Limiter {
	if max <= 0 {
		max = -1
	}
	return NewLimiterWith(&LimiterOptions{Max: max})
}

// NewLimiterWith returns a Limiter configured by opts (nil = defaults: 10
// slots, 5 per client, clients told apart by DefaultClientKey).
func NewLimiterWith(opts *LimiterOptions) *Limiter {
	var o LimiterOptions
	if opts != nil {
		o = *opts
	}
	if o.Max == 0 {
		o.Max = DefaultMaxConcurrent
	}
	if o.Max < 0 {
		o.Max, o.PerClient = 0, 0
	} else if o.PerClient == 0 {
		o.PerClient = DefaultPerClientShare(o.Max)
	}
	if o.PerClient < 0 {
		o.PerClient = 0
	}
	o.PerClient = min(o.PerClient, o.Max)
	if o.ClientKey == nil {
		o.ClientKey = DefaultClientKey
	}
	return &Limiter{max: int64(o.Max), perClient: int64(o.PerClient), key: o.ClientKey}
}

// Max returns the number of slots (0 = unlimited).
func (l *Limiter) Max() int { return int(l.max) }

// PerClient returns the number of slots one client may hold at once (0 =
// no per-client share).
func (l *Limiter) PerClient() int { return int(l.perClient) }

// InUse returns the number of slots taken now: calls whose handlers have not
// yet returned.
func (l *Limiter) InUse() int { return int(l.inUse.Load()) }

// ClientInUse returns the number of slots the client, or the peer, with
// key holds now.
func (l *Limiter) ClientInUse(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.clients[key] + l.peers[key])
}

// TryAcquire takes a slot if one is free and reports whether it did. It
// does not count the slot against any client. Each successful TryAcquire
// must be paired with one Release.
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

// Which limit refused a slot (acquireFor).
const (
	limitTotal     = "maxConcurrentExecutions"
	limitPerClient = "maxConcurrentPerClient"
)

// acquireFor takes a slot for the peer and client with these keys (see
// shareKeys; "" = no share), within both shares, and returns "" or the
// limit that refused it, with the slots the refusing (or, on success, the
// finest) share holds.
func (l *Limiter) acquireFor(peer, client string) (refused string, held int64) {
	if (peer == "" && client == "") || l.perClient <= 0 {
		if !l.TryAcquire() {
			return limitTotal, 0
		}
		return "", 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	hp, hc := l.peers[peer], l.clients[client]
	switch {
	case peer != "" && hp >= l.perClient:
		return limitPerClient, hp
	case client != "" && hc >= l.perClient:
		return limitPerClient, hc
	case !l.TryAcquire():
		return limitTotal, max(hp, hc)
	}
	if peer != "" {
		l.peers = count(l.peers, peer, 1)
	}
	if client != "" {
		l.clients = count(l.clients, client, 1)
		return "", hc + 1
	}
	return "", hp + 1
}

// count adds d to m[key], dropping keys that reach 0 (the maps hold only
// keys holding slots), and returns m (made when nil).
func count(m map[string]int64, key string, d int64) map[string]int64 {
	if m == nil {
		m = make(map[string]int64)
	}
	if n := m[key] + d; n > 0 {
		m[key] = n
	} else {
		delete(m, key)
	}
	return m
}

// releaseFor gives back a slot taken by acquireFor(peer, client).
func (l *Limiter) releaseFor(peer, client string) {
	if (peer != "" || client != "") && l.perClient > 0 {
		l.mu.Lock()
		if peer != "" {
			l.peers = count(l.peers, peer, -1)
		}
		if client != "" {
			l.clients = count(l.clients, client, -1)
		}
		l.mu.Unlock()
	}
	l.Release()
}

// Middleware returns the stage. A call that finds no free slot is rejected
// at once with a retryable RESOURCE_EXHAUSTED tool error with details
// {"limit": "maxConcurrentExecutions", "maxConcurrentExecutions": max,
// "concurrentExecutions": n}; a call whose client already holds its share
// gets {"limit": "maxConcurrentPerClient", "maxConcurrentPerClient": share,
// "clientExecutions": held, "maxConcurrentExecutions": max,
// "concurrentExecutions": n}. The share is checked first. A call that runs
// as a task (c.Task set) takes no slot: the task pool bounds it.
func (l *Limiter) Middleware() Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			if c.Task != nil {
				return next(ctx, c) // a task: the Server's task pool bounds it
			}
			peer, client := "", ""
			if l.perClient > 0 {
				peer, client = shareKeys(l.key, ctx, c)
			}
			switch refused, held := l.acquireFor(peer, client); refused {
			case limitPerClient:
				return nil, c.toolError(mcp.ErrResourceExhausted,
					"too many concurrent tool executions for this client (maxConcurrentPerClient is "+strconv.FormatInt(l.perClient, 10)+")",
					map[string]any{"limit": limitPerClient, limitPerClient: l.perClient, "clientExecutions": held,
						limitTotal: l.max, "concurrentExecutions": l.inUse.Load()})
			case limitTotal:
				return nil, c.toolError(mcp.ErrResourceExhausted,
					"too many concurrent tool executions (maxConcurrentExecutions is "+strconv.FormatInt(l.max, 10)+")",
					map[string]any{"limit": limitTotal, limitTotal: l.max, "concurrentExecutions": l.inUse.Load()})
			}
			defer l.releaseAfter(c, peer, client)
			return next(ctx, c)
		}
	}
}

// releaseAfter releases a call's slot once its handler has really
// returned: now, or later when a Timeout inside returned first
// (mcp.ToolCall.AfterHandler).
func (l *Limiter) releaseAfter(c *Call, peer, client string) {
	if c.Detached() {
		c.AfterHandler(func() { l.releaseFor(peer, client) })
		return
	}
	l.releaseFor(peer, client)
}

// Concurrency returns a stage allowing at most max calls to execute at once,
// with the default per-client share (see Limiter; use NewLimiter directly to
// read its counters, for example for the health tool).
func Concurrency(max int) Middleware { return NewLimiter(max).Middleware() }
