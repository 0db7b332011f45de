package middleware

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// metaKey is a ClientKeyFunc reading the client from _meta["client"].
func metaKey(_ context.Context, tc *mcp.ToolCall) string {
	s, _ := tc.Meta["client"].(string)
	return s
}

func callAs(client, name, args string) *mcp.ToolCall {
	tc := call(name, args, nil)
	if client != "" {
		tc.Meta = mcp.Meta{"client": client}
	}
	return tc
}

func TestLimiterOptionsShare(t *testing.T) {
	for _, tc := range []struct {
		name           string
		opts           *LimiterOptions
		max, perClient int
	}{
		{"nil: defaults", nil, 10, 5},
		{"zero: defaults", &LimiterOptions{}, 10, 5},
		{"half of the slots", &LimiterOptions{Max: 8}, 8, 4},
		{"odd: rounded down", &LimiterOptions{Max: 3}, 3, 1},
		{"at least one", &LimiterOptions{Max: 1}, 1, 1},
		{"explicit", &LimiterOptions{Max: 10, PerClient: 7}, 10, 7},
		{"not above the total", &LimiterOptions{Max: 4, PerClient: 9}, 4, 4},
		{"no share", &LimiterOptions{Max: 10, PerClient: -1}, 10, 0},
		{"unlimited: no share", &LimiterOptions{Max: -1, PerClient: 3}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLimiterWith(tc.opts)
			assert.Equal(t, tc.max, l.Max())
			assert.Equal(t, tc.perClient, l.PerClient())
		})
	}
	assert.Equal(t, 5, NewLimiter(10).PerClient(), "NewLimiter applies the default share")
	assert.Equal(t, 0, NewLimiter(0).PerClient())
	assert.Equal(t, 0, DefaultPerClientShare(-1))
}

// A greedy client beside polite ones: the greedy one is held to its share,
// the polite ones still get slots; the total still bounds everybody.
func TestLimiterFairShare(t *testing.T) {
	resetExhausted()
	tt := newTestTools(t)
	lim := NewLimiterWith(&LimiterOptions{Max: 4, ClientKey: metaKey}) // 2 per client
	ch := New(tt.reg, lim.Middleware())
	ctx := context.Background()
	var wg sync.WaitGroup
	block := func(client string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ch.CallTool(ctx, callAs(client, "block", `{}`))
			assert.NoError(t, err)
		}()
		<-tt.started
	}
	block("greedy")
	block("greedy")
	assert.Equal(t, 2, lim.ClientInUse("greedy"))

	for _, tc := range []struct {
		client, limit string
		details       map[string]any
	}{
		{"greedy", "maxConcurrentPerClient", map[string]any{"limit": "maxConcurrentPerClient", "maxConcurrentPerClient": int64(2),
			"clientExecutions": int64(2), "maxConcurrentExecutions": int64(4), "concurrentExecutions": int64(2)}},
		{"polite", "", nil},
		{"", "", nil}, // no key: only the total counts
	} {
		_, err := ch.CallTool(ctx, callAs(tc.client, "echo", `{"message":"hi"}`))
		if tc.limit == "" {
			assert.NoError(t, err, "client %q", tc.client)
			continue
		}
		se := structuredErr(t, err)
		assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
		assert.True(t, se.Retryable)
		assert.Equal(t, tc.details, se.Details)
		assert.Contains(t, se.Message, "for this client")
	}

	block("other")
	block("")
	assert.Equal(t, 4, lim.InUse())
	_, err := ch.CallTool(ctx, callAs("polite", "echo", `{"message":"hi"}`))
	se := structuredErr(t, err)
	assert.Equal(t, "maxConcurrentExecutions", se.Details["limit"], "every slot is taken: the total refuses")

	close(tt.release)
	wg.Wait()
	assert.Equal(t, 0, lim.InUse())
	for _, k := range []string{"greedy", "other", "polite", ""} {
		assert.Equal(t, 0, lim.ClientInUse(k))
	}
	lim.mu.Lock()
	assert.Empty(t, lim.clients, "clients holding no slot are not kept")
	lim.mu.Unlock()
}

// Many clients racing for the slots: nobody ever holds more than its share,
// the total is never passed, everything is given back.
func TestLimiterFairShareUnderRace(t *testing.T) {
	tt := newTestTools(t)
	lim := NewLimiterWith(&LimiterOptions{Max: 6, PerClient: 2, ClientKey: metaKey})
	var mu sync.Mutex
	peak := map[string]int{}
	total := 0
	probe := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			k := metaKey(ctx, c.ToolCall)
			mu.Lock()
			peak[k] = max(peak[k], lim.ClientInUse(k))
			total = max(total, lim.InUse())
			mu.Unlock()
			return next(ctx, c)
		}
	}
	ch := New(tt.reg, lim.Middleware(), probe)
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = ch.CallTool(context.Background(), callAs([]string{"a", "b", "c", "d"}[i%4], "echo", `{"message":"x"}`))
		}()
	}
	wg.Wait()
	assert.Equal(t, 0, lim.InUse())
	assert.LessOrEqual(t, total, 6)
	for k, n := range peak {
		assert.LessOrEqual(t, n, 2, "client %s", k)
	}
}

// Keys are bounded in size.
func TestClientKeyBounded(t *testing.T) {
	long := strings.Repeat("k", 1000)
	c := NewCall(nil, &mcp.ToolCall{})
	k := clientKeyOf(func(context.Context, *mcp.ToolCall) string { return long }, context.Background(), c)
	assert.LessOrEqual(t, len(k), maxClientKeyBytes)
	assert.True(t, strings.HasPrefix(k, "sha256:"))
	assert.Equal(t, "short", clientKeyOf(func(context.Context, *mcp.ToolCall) string { return "short" }, context.Background(), c))
}

// A ClientKeyFunc finer than the peer (here: the name a call gives)
// splits the peer's share and never enlarges it: two names of one peer
// hold its share together, for the concurrency slots and the rate limit,
// while another peer is served.
func TestClientKeySplitsThePeerShare(t *testing.T) {
	resetExhausted()
	peerA := transport.WithPeer(context.Background(), transport.PeerOfAddr(netip.MustParseAddr("192.0.2.1")))
	peerB := transport.WithPeer(context.Background(), transport.PeerOfAddr(netip.MustParseAddr("192.0.2.2")))

	t.Run("concurrency slots", func(t *testing.T) {
		tt := newTestTools(t)
		lim := NewLimiterWith(&LimiterOptions{Max: 6, PerClient: 2, ClientKey: metaKey})
		ch := New(tt.reg, lim.Middleware())
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(tt.release)
		for _, name := range []string{"one", "two"} {
			wg.Go(func() {
				_, err := ch.CallTool(peerA, callAs(name, "block", `{}`))
				assert.NoError(t, err)
			})
			<-tt.started
		}
		assert.Equal(t, 2, lim.ClientInUse("addr:192.0.2.1"), "the peer holds its share")
		_, err := ch.CallTool(peerA, callAs("three", "echo", `{"message":"hi"}`))
		se := structuredErr(t, err)
		assert.Equal(t, "maxConcurrentPerClient", se.Details["limit"], "a third name gains nothing")
		_, err = ch.CallTool(peerB, callAs("one", "echo", `{"message":"hi"}`))
		assert.NoError(t, err, "another peer is served, under any name")
	})
	t.Run("rate limit", func(t *testing.T) {
		tt := newTestTools(t)
		clk := newManualClock()
		rl, err := NewRateLimiter(&RateLimitOptions{PerClient: Rate{Calls: 1, Per: time.Minute}, ClientKey: metaKey, Now: clk.Now})
		require.NoError(t, err)
		ch := New(tt.reg, rl.Middleware())
		_, err = ch.CallTool(peerA, callAs("one", "echo", `{"message":"hi"}`))
		require.NoError(t, err)
		_, err = ch.CallTool(peerA, callAs("two", "echo", `{"message":"hi"}`))
		assert.Equal(t, mcp.ErrRateLimited, structuredErr(t, err).Code, "another name of the peer shares its bucket")
		_, err = ch.CallTool(peerB, callAs("two", "echo", `{"message":"hi"}`))
		assert.NoError(t, err, "another peer has its own bucket")
	})
}
