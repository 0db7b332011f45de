//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// busFanOut links the servers of one test as if they were processes: a
// change published by one is delivered to every other.
type busFanOut struct {
	bus *bus
}

type bus struct {
	mu   sync.Mutex
	subs map[*busFanOut]func(mcp.Change)
	sent []mcp.Change
}

func (f *busFanOut) Publish(_ context.Context, c mcp.Change) error {
	f.bus.mu.Lock()
	f.bus.sent = append(f.bus.sent, c)
	var deliver []func(mcp.Change)
	for o, d := range f.bus.subs {
		if o != f {
			deliver = append(deliver, d)
		}
	}
	f.bus.mu.Unlock()
	for _, d := range deliver {
		d(c)
	}
	return nil
}

func (f *busFanOut) Subscribe(deliver func(mcp.Change)) func() {
	f.bus.mu.Lock()
	defer f.bus.mu.Unlock()
	f.bus.subs[f] = deliver
	return func() {
		f.bus.mu.Lock()
		defer f.bus.mu.Unlock()
		delete(f.bus.subs, f)
	}
}

// Every change a Server announces goes through ServerOptions.FanOut, and
// the changes of the other processes reach this one's clients: each
// client gets a NotifyAll once, whichever server it is connected to.
func TestFanOutCarriesChanges(t *testing.T) {
	b := &bus{subs: map[*busFanOut]func(mcp.Change){}}
	type replica struct {
		srv *mcp.Server
		mu  sync.Mutex
		got []string
	}
	start := func() *replica {
		r := &replica{}
		o := mcptest.ServerOptions(httpTools(t))
		o.FanOut = &busFanOut{bus: b}
		r.srv = mcp.NewServer(o)
		ct, st := transport.NewPipe(nil)
		go func() { _ = r.srv.Run(context.Background(), st) }()
		c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler), OnNotification: func(m string, p json.RawMessage) {
			r.mu.Lock()
			r.got = append(r.got, m+" "+string(p))
			r.mu.Unlock()
		}})
		require.NoError(t, c.Connect(context.Background(), ct))
		t.Cleanup(func() { c.Close() })
		return r
	}
	a, other := start(), start()
	for _, r := range []*replica{a, other} { // both sessions initialized
		require.Eventually(t, func() bool {
			ss := r.srv.Sessions()
			return len(ss) == 1 && ss[0].StateForTest() == mcp.StateRunning
		}, 5*time.Second, 5*time.Millisecond)
	}
	require.NoError(t, a.srv.NotifyAll(context.Background(), "notifications/custom", map[string]any{"n": 1}))
	for _, r := range []*replica{a, other} {
		require.Eventually(t, func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return len(r.got) > 0
		}, 5*time.Second, 5*time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	for _, r := range []*replica{a, other} {
		r.mu.Lock()
		assert.Equal(t, []string{`notifications/custom {"n":1}`}, r.got, "once on each server")
		r.mu.Unlock()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Len(t, b.sent, 1)
	assert.Equal(t, mcp.Change{Kind: "notify", Method: "notifications/custom", Params: json.RawMessage(`{"n":1}`)}, b.sent[0])
}

// stallingTransport stops writing once stall is set (a client that does
// not read): its Writes of messages containing only ("" = all) wait for
// their context, or until release (if set) is closed, when they are
// written. entered tells that a Write stalled, timedOut that one ended by
// its context.
type stallingTransport struct {
	transport.Transport
	stall             atomic.Bool
	only              string
	release           chan struct{}
	entered, timedOut atomic.Bool
}

func (s *stallingTransport) Write(ctx context.Context, msg []byte) error {
	if s.stall.Load() && strings.Contains(string(msg), s.only) {
		s.entered.Store(true)
		select {
		case <-s.release: // a nil release never is
		case <-ctx.Done():
			s.timedOut.Store(true)
			return ctx.Err()
		}
	}
	return s.Transport.Write(ctx, msg)
}

// Another process's NotifyAll holds the one delivery goroutine for a
// bounded time when a client of this one does not read.
func TestFanOutRemoteNotifyAllIsBounded(t *testing.T) {
	defer mcp.SetRemoteNotifyTimeoutForTest(100 * time.Millisecond)()
	b := &bus{subs: map[*busFanOut]func(mcp.Change){}}
	o := mcptest.ServerOptions(httpTools(t))
	o.Logger = slog.New(slog.DiscardHandler)
	o.FanOut = &busFanOut{bus: b}
	srv := mcp.NewServer(o)
	ct, pst := transport.NewPipe(nil)
	st := &stallingTransport{Transport: pst}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Run(ctx, st) }()
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, c.Connect(ctx, ct))
	defer c.Close()
	require.Eventually(t, func() bool {
		ss := srv.Sessions()
		return len(ss) == 1 && ss[0].StateForTest() == mcp.StateRunning
	}, 5*time.Second, 5*time.Millisecond)
	st.stall.Store(true)
	other := &busFanOut{bus: b}
	done := make(chan struct{})
	go func() { // the bus delivers on the publisher's goroutine
		defer close(done)
		for range 3 {
			_ = other.Publish(ctx, mcp.Change{Kind: "notify", Method: "notifications/custom", Params: json.RawMessage(`{}`)})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the delivery of another process's NotifyAll is held by a client that does not read")
	}
}
