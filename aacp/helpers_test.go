package aacp

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"
)

// fakeClock is a Clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// manualNode returns a started node on a MemoryStore with a fake clock and
// no background loop: the test calls poll.
func manualNode(t *testing.T, mux *Mux, opts *Options) (*Node, *MemoryStore, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Clock, o.PollInterval = clock, -1
	if o.Logger == nil {
		o.Logger = quietLogger
	}
	if o.Rand == nil {
		o.Rand = func() float64 { return 0 }
	}
	st := NewMemoryStore()
	n := New(st, mux, &o)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { n.Close(context.Background()) })
	return n, st, clock
}

// poll runs one Poll and waits for the handlers it started.
func poll(t *testing.T, n *Node) int {
	t.Helper()
	k, err := n.Poll(context.Background())
	require.NoError(t, err)
	n.bg.Wait()
	return k
}

// counter counts handler executions per requestId.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[id]++
	return c.n[id]
}

func (c *counter) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, v := range c.n {
		t += v
	}
	return t
}

// echoMux hosts "echo" (returns its payload) and counts its executions.
func echoMux(c *counter) *Mux {
	m := NewMux()
	m.HandleFunc("echo", func(_ context.Context, env *Envelope) (any, error) {
		if c != nil {
			c.add(env.RequestID)
		}
		return env.Payload, nil
	})
	return m
}

// lossyLink drops, duplicates and reorders envelopes, deterministically
// for a seed. Reordered envelopes are held back and delivered after the
// next few ones.
type lossyLink struct {
	n                  *Node
	rng                *rand.Rand
	drop, dup, reorder float64

	mu      sync.Mutex
	held    []heldEnv
	dropped []uint64
	stats   struct{ sent, dropped, duplicated, reordered int }
}

type heldEnv struct {
	env   *Envelope
	after int // deliver after this many more sends
}

func newLossyLink(n *Node, seed uint64, drop, dup, reorder float64) *lossyLink {
	l := &lossyLink{n: n, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), drop: drop, dup: dup, reorder: reorder}
	n.transmit = l.send
	return l
}

func (l *lossyLink) send(ctx context.Context, env *Envelope, fresh *execution, _ bool) {
	l.n.endFresh(fresh) // no fresh shortcut: deduplicate through the ledger
	l.mu.Lock()
	l.stats.sent++
	var deliver []*Envelope
	keep := l.held[:0]
	for _, h := range l.held {
		if h.after--; h.after <= 0 {
			deliver = append(deliver, h.env)
		} else {
			keep = append(keep, h)
		}
	}
	l.held = keep
	r := l.rng.Float64()
	switch {
	case r < l.drop:
		l.stats.dropped++
		l.dropped = append(l.dropped, env.Seq)
	case r < l.drop+l.reorder:
		l.stats.reordered++
		l.held = append(l.held, heldEnv{env: env, after: 1 + l.rng.IntN(4)})
	case r < l.drop+l.reorder+l.dup:
		l.stats.duplicated++
		deliver = append(deliver, env, env)
	default:
		deliver = append(deliver, env)
	}
	l.mu.Unlock()
	for _, e := range deliver {
		l.n.receive(ctx, e, nil, false)
	}
}

// flush delivers everything held back.
func (l *lossyLink) flush(ctx context.Context) {
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.mu.Unlock()
	for _, h := range held {
		l.n.receive(ctx, h.env, nil, false)
	}
}

func raw(s string) jsontext.Value { return jsontext.Value(s) }
