package middleware

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// manualClock is a clock the test moves.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newManualClock() *manualClock {
	return &manualClock{t: time.Date(2025, 11, 25, 12, 0, 0, 0, time.UTC)}
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

func (m *manualClock) Advance(d time.Duration) {
	m.mu.Lock()
	m.t = m.t.Add(d)
	m.mu.Unlock()
}

func TestRateLimitOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *RateLimitOptions
		err  string
	}{
		{"nil", nil, ""},
		{"zero rates", &RateLimitOptions{PerTool: map[string]Rate{"echo": {}}}, ""},
		{"valid", &RateLimitOptions{PerClient: Rate{Calls: 5, Per: time.Second}, PerTool: map[string]Rate{"echo": {Calls: 1, Per: time.Minute, Burst: 3}}}, ""},
		{"no period", &RateLimitOptions{PerClient: Rate{Calls: 5}}, "RateLimitOptions.PerClient: a rate needs Calls > 0 and Per > 0"},
		{"no calls", &RateLimitOptions{PerClient: Rate{Per: time.Second}}, "RateLimitOptions.PerClient"},
		{"negative burst", &RateLimitOptions{PerTool: map[string]Rate{"echo": {Calls: 1, Per: time.Second, Burst: -1}}}, `RateLimitOptions.PerTool["echo"]`},
		{"negative max clients", &RateLimitOptions{MaxClients: -1}, "MaxClients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewRateLimiter(tc.opts)
			if tc.err == "" {
				require.NoError(t, err)
				require.NotNil(t, l)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Panics(t, func() { RateLimit(tc.opts) })
		})
	}
}

// The token bucket: a burst passes, then calls pass at the rate; a refusal
// says when to come back, and coming back then works.
func TestRateLimiterTokenBucket(t *testing.T) {
	tt := newTestTools(t)
	clk := newManualClock()
	rl, err := NewRateLimiter(&RateLimitOptions{PerClient: Rate{Calls: 2, Per: time.Second, Burst: 3}, ClientKey: metaKey, Now: clk.Now})
	require.NoError(t, err)
	ch := New(tt.reg, rl.Middleware())
	ctx := context.Background()
	echo := func(client string) error {
		_, err := ch.CallTool(ctx, callAs(client, "echo", `{"message":"x"}`))
		return err
	}
	for i := range 3 {
		require.NoError(t, echo("a"), "burst call %d", i)
	}
	for _, step := range []struct {
		advance    time.Duration
		refused    bool
		retryAfter int64
	}{
		{0, true, 500},                    // empty: a token every 500ms
		{499 * time.Millisecond, true, 1}, // almost
		{time.Millisecond, false, 0},      // one token back
		{0, true, 500},                    // used again
		{10 * time.Second, false, 0},      // long quiet: full again...
		{0, false, 0},                     // ...
		{0, false, 0},                     // ... but never beyond the burst
		{0, true, 500},
	} {
		clk.Advance(step.advance)
		err := echo("a")
		if !step.refused {
			require.NoError(t, err)
			continue
		}
		se := structuredErr(t, err)
		assert.Equal(t, mcp.ErrRateLimited, se.Code)
		assert.True(t, se.Retryable)
		assert.Equal(t, map[string]any{"limit": "rateLimit", "retryAfterMs": step.retryAfter, "calls": 2, "perMs": int64(1000), "burst": 3}, se.Details)
		assert.Equal(t, "run-1", se.RunID)
		assert.Contains(t, se.Message, "retry in "+strconv.FormatInt(step.retryAfter, 10)+"ms")
	}
	require.NoError(t, echo("b"), "another client has its own bucket")
	for range 10 {
		require.NoError(t, echo(""), "no client key: not rate-limited")
	}
}

// Per-tool rates apply per client and tool, on top of the client's rate;
// a refused call takes no token from any bucket.
func TestRateLimiterPerTool(t *testing.T) {
	tt := newTestTools(t)
	registry.MustRegister(tt.reg, "echo2", "Echoes too.", func(_ context.Context, in echoIn) (string, error) { return in.Message, nil }, nil)
	clk := newManualClock()
	rl, err := NewRateLimiter(&RateLimitOptions{
		PerClient: Rate{Calls: 3, Per: time.Second},
		PerTool:   map[string]Rate{"echo": {Calls: 1, Per: time.Minute}},
		ClientKey: metaKey, Now: clk.Now,
	})
	require.NoError(t, err)
	ch := New(tt.reg, rl.Middleware())
	ctx := context.Background()
	do := func(client, tool string) error {
		_, err := ch.CallTool(ctx, callAs(client, tool, `{"message":"x"}`))
		return err
	}
	require.NoError(t, do("a", "echo"))
	se := structuredErr(t, do("a", "echo"))
	assert.Equal(t, mcp.ErrRateLimited, se.Code)
	assert.Equal(t, map[string]any{"limit": "toolRateLimit", "tool": "echo", "retryAfterMs": int64(60000), "calls": 1, "perMs": int64(60000), "burst": 1}, se.Details)
	require.NoError(t, do("b", "echo"), "per client")
	// The refused echo took no token from a's own bucket: 2 left.
	require.NoError(t, do("a", "echo2"))
	require.NoError(t, do("a", "echo2"))
	se = structuredErr(t, do("a", "echo2"))
	assert.Equal(t, "rateLimit", se.Details["limit"])
	// Both empty: the longer wait is given, for the tool.
	se = structuredErr(t, do("a", "echo"))
	assert.Equal(t, "toolRateLimit", se.Details["limit"])
	assert.EqualValues(t, 60000, se.Details["retryAfterMs"])
}

// A peer cannot grow the limiter's memory without bound by showing new
// client keys: at most MaxClients are kept; idle clients go first.
func TestRateLimiterBoundedClients(t *testing.T) {
	tt := newTestTools(t)
	clk := newManualClock()
	rl, err := NewRateLimiter(&RateLimitOptions{PerClient: Rate{Calls: 1, Per: time.Second, Burst: 2}, MaxClients: 50, ClientKey: metaKey, Now: clk.Now})
	require.NoError(t, err)
	ch := New(tt.reg, rl.Middleware())
	ctx := context.Background()
	for i := range 10000 {
		_, err := ch.CallTool(ctx, callAs("c"+strconv.Itoa(i), "echo", `{"message":"x"}`))
		require.NoError(t, err)
		require.LessOrEqual(t, rl.Clients(), 50)
	}
	assert.Equal(t, 50, rl.Clients())

	t.Run("idle clients are forgotten first", func(t *testing.T) {
		clk.Advance(time.Hour) // every bucket is full again
		_, err := ch.CallTool(ctx, callAs("fresh", "echo", `{"message":"x"}`))
		require.NoError(t, err)
		assert.Equal(t, 49, rl.Clients(), "two idle clients forgotten, one added")
	})
	t.Run("a client that keeps calling is not forgotten", func(t *testing.T) {
		// Many new keys come and go; the greedy client, seen all along,
		// keeps its empty bucket: only the least recently seen are
		// forgotten.
		rl, err := NewRateLimiter(&RateLimitOptions{PerClient: Rate{Calls: 1, Per: time.Minute, Burst: 2}, MaxClients: 3, ClientKey: metaKey, Now: clk.Now})
		require.NoError(t, err)
		ch := New(tt.reg, rl.Middleware())
		do := func(c string) error {
			_, err := ch.CallTool(ctx, callAs(c, "echo", `{"message":"x"}`))
			return err
		}
		require.NoError(t, do("greedy"))
		require.NoError(t, do("greedy"))
		for i := range 100 {
			require.NoError(t, do("new"+strconv.Itoa(i)))
			se := structuredErr(t, do("greedy"))
			require.Equal(t, mcp.ErrRateLimited, se.Code, "round %d", i)
			require.LessOrEqual(t, rl.Clients(), 3)
		}
	})
}

// Under concurrent calls of one client, exactly the burst passes.
func TestRateLimiterUnderRace(t *testing.T) {
	tt := newTestTools(t)
	clk := newManualClock() // frozen: no token comes back
	rl, err := NewRateLimiter(&RateLimitOptions{PerClient: Rate{Calls: 1, Per: time.Hour, Burst: 25}, ClientKey: metaKey, Now: clk.Now})
	require.NoError(t, err)
	ch := New(tt.reg, rl.Middleware())
	var passed, limited atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ch.CallTool(context.Background(), callAs("a", "echo", `{"message":"x"}`))
			if err == nil {
				passed.Add(1)
			} else if structuredErr(t, err).Code == mcp.ErrRateLimited {
				limited.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 25, passed.Load())
	assert.EqualValues(t, 175, limited.Load())
}

// In Standard: off by default; when on, it uses StandardOptions.ClientKey
// and refuses before a concurrency slot is taken.
func TestStandardRateLimit(t *testing.T) {
	tt := newTestTools(t)
	ctx := context.Background()
	off := Standard(tt.reg, &StandardOptions{ClientKey: metaKey})
	for range 50 {
		_, err := off.CallTool(ctx, callAs("a", "echo", `{"message":"x"}`))
		require.NoError(t, err, "no rate limit by default")
	}

	clk := newManualClock()
	lim := NewLimiter(4)
	var inUseAtRefusal []int
	outer := func(next Handler) Handler { // runs outside Standard's stages
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			res, err := next(ctx, c)
			if err != nil {
				inUseAtRefusal = append(inUseAtRefusal, lim.InUse())
			}
			return res, err
		}
	}
	ch := Standard(tt.reg, &StandardOptions{Limiter: lim, ClientKey: metaKey,
		RateLimit: &RateLimitOptions{PerClient: Rate{Calls: 1, Per: time.Second}, Now: clk.Now,
			ClientKey: func(context.Context, *mcp.ToolCall) string { return "ignored" }}})
	h := outer(ch.Handler())
	_, err := h(ctx, NewCall(tt.reg, callAs("a", "echo", `{"message":"x"}`)))
	require.NoError(t, err)
	_, err = h(ctx, NewCall(tt.reg, callAs("a", "echo", `{"message":"x"}`)))
	assert.Equal(t, mcp.ErrRateLimited, structuredErr(t, err).Code)
	_, err = h(ctx, NewCall(tt.reg, callAs("b", "echo", `{"message":"x"}`)))
	require.NoError(t, err, "StandardOptions.ClientKey tells a and b apart")
	assert.Equal(t, []int{0}, inUseAtRefusal)
	assert.Equal(t, 12, ch.Len())
}
