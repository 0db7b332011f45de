package agents_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
)

type seqPayload struct {
	Sender int
	Seq    int
}

// Messages from concurrent senders reach one agent one at a time, each
// sender's in the order it sent them; different agents run at once.
func TestOrderPerAgentUnderConcurrentSenders(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	const senders, perSender = 4, 150
	agentIDs := []string{"a", "b", "c"}
	type tracker struct {
		inFlight atomic.Int32
		maxIn    atomic.Int32
		last     [senders]int // touched only inside the handler
		count    int
	}
	trackers := map[string]*tracker{}
	for _, id := range agentIDs {
		tr := &tracker{}
		for i := range tr.last {
			tr.last[i] = -1
		}
		trackers[id] = tr
		require.NoError(t, c.Register(id, func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
			n := tr.inFlight.Add(1)
			defer tr.inFlight.Add(-1)
			if n > tr.maxIn.Load() {
				tr.maxIn.Store(n)
			}
			p := msg.Payload.(seqPayload)
			if p.Seq <= tr.last[p.Sender] {
				return nil, fmt.Errorf("sender %d: seq %d after %d", p.Sender, p.Seq, tr.last[p.Sender])
			}
			tr.last[p.Sender] = p.Seq
			tr.count++
			return p.Seq, nil
		}, nil))
	}

	var wg sync.WaitGroup
	errs := make(chan error, senders*len(agentIDs))
	for s := range senders {
		for _, id := range agentIDs {
			wg.Go(func() {
				for i := range perSender {
					// Asynchronous bursts: several messages of one sender are
					// queued before the first is processed.
					res, err := c.Send(context.Background(), id, agents.Message{Type: "seq", Payload: seqPayload{Sender: s, Seq: i}})
					if err != nil {
						errs <- err
						return
					}
					if res != i {
						errs <- fmt.Errorf("got %v for %d", res, i)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for id, tr := range trackers {
		assert.EqualValues(t, 1, tr.maxIn.Load(), "agent %s ran two handlers at once", id)
		st, _ := c.Agent(id)
		assert.EqualValues(t, senders*perSender, st.Processed, id)
		assert.Zero(t, st.Failed, id)
	}
}

// Order is the queue order even when one sender queues many messages
// without waiting: sequence numbers are observed strictly increasing.
func TestOrderOfQueuedMessages(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	g := newGate()
	var seen []int
	require.NoError(t, c.Register("a", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		if msg.Type == "block" {
			return g.handler(ctx, msg, ac)
		}
		seen = append(seen, msg.Payload.(int))
		return nil, nil
	}, nil))
	first := sendAsync(context.Background(), c, "a", "block")
	g.waitEntered(t, "block")
	const n = 50
	outs := make([]chan error, n)
	for i := range n {
		outs[i] = make(chan error, 1)
		go func() {
			_, err := c.Send(context.Background(), "a", agents.Message{Type: "seq", Payload: i})
			outs[i] <- err
		}()
		eventually(t, func() bool { return queueLength(c, "a") == i+1 }, "queued")
	}
	close(g.release)
	wait(t, first)
	for i := range n {
		require.NoError(t, <-outs[i])
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, seen)
}

func TestAgentsRunConcurrently(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	g := newGate()
	require.NoError(t, c.Register("a", g.handler, nil))
	require.NoError(t, c.Register("b", g.handler, nil))
	ra := sendAsync(context.Background(), c, "a", "x")
	rb := sendAsync(context.Background(), c, "b", "x")
	// Both handlers are blocked at the same time.
	g.waitEntered(t, "x")
	g.waitEntered(t, "x")
	for _, id := range []string{"a", "b"} {
		st, _ := c.Agent(id)
		assert.True(t, st.Busy, id)
	}
	close(g.release)
	assert.Equal(t, "done:x", wait(t, ra).res)
	assert.Equal(t, "done:x", wait(t, rb).res)
}

func TestRegisterErrors(t *testing.T) {
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	h := func(context.Context, agents.Message, *agents.AgentContext) (any, error) { return nil, nil }
	require.NoError(t, c.Register("a", h, &agents.AgentInfo{Name: "A"}))

	err := c.Register("a", h, nil)
	require.ErrorIs(t, err, agents.ErrAgentExists)
	require.Contains(t, err.Error(), `"a"`)
	se := structured(t, err)
	assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
	assert.Equal(t, agents.ReasonAgentExists, se.Details["reason"])

	require.ErrorIs(t, c.Register("", h, nil), agents.ErrInvalidAgent)
	require.ErrorIs(t, c.Register("b", nil, nil), agents.ErrInvalidAgent)
	require.False(t, c.Has("b"))
}

func TestSendErrors(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	echo := func(_ context.Context, msg agents.Message, _ *agents.AgentContext) (any, error) { return msg.Type, nil }
	require.NoError(t, c.Register("off", echo, &agents.AgentInfo{Disabled: true}))

	tests := []struct {
		name   string
		target string
		cause  error
		code   mcp.ErrorCode
		reason string
	}{
		{"unknown agent", "nope", agents.ErrAgentNotFound, mcp.ErrNotFound, agents.ReasonAgentNotFound},
		{"disabled agent", "off", agents.ErrAgentDisabled, mcp.ErrUnauthorized, agents.ReasonPermissionDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Send(context.Background(), tt.target, agents.Message{Type: "x"})
			require.ErrorIs(t, err, tt.cause)
			require.ErrorIs(t, err, agents.ErrNotDelivered)
			se := structured(t, err)
			assert.Equal(t, tt.code, se.Code)
			assert.Equal(t, tt.reason, se.Details["reason"])
			assert.Equal(t, tt.target, se.Details["agentId"])
			var ae *agents.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.target, ae.AgentID)
		})
	}

	require.True(t, c.SetEnabled("off", true))
	res, err := c.Send(context.Background(), "off", agents.Message{Type: "x"})
	require.NoError(t, err)
	require.Equal(t, "x", res)
	require.False(t, c.SetEnabled("nope", true))

	// A context that is already done queues nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Send(ctx, "off", agents.Message{Type: "x"})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, agents.ErrNotDelivered)
}

func TestHandlerErrorUnchanged(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	boom := errors.New("boom")
	require.NoError(t, c.Register("a", func(context.Context, agents.Message, *agents.AgentContext) (any, error) {
		return nil, boom
	}, nil))
	_, err := c.Send(context.Background(), "a", agents.Message{Type: "x"})
	require.Same(t, boom, err)
	require.NotErrorIs(t, err, agents.ErrNotDelivered)
	st, _ := c.Agent("a")
	assert.EqualValues(t, 1, st.Processed)
	assert.EqualValues(t, 1, st.Failed)
}

func TestHandlerPanic(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(&agents.Options{Logger: discardLogger()})
	shutdown(t, c)
	require.NoError(t, c.Register("a", func(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		if msg.Type == "panic" {
			_ = ac.State.Set("k", 1)
			panic("oops")
		}
		return "ok", nil
	}, nil))
	_, err := c.Send(context.Background(), "a", agents.Message{Type: "panic"})
	require.ErrorIs(t, err, agents.ErrHandlerPanic)
	assert.Equal(t, mcp.ErrInternal, structured(t, err).Code)
	state, _ := c.State("a")
	assert.Empty(t, state, "changes of a panicking handler are discarded")
	res, err := c.Send(context.Background(), "a", agents.Message{Type: "ok"})
	require.NoError(t, err)
	require.Equal(t, "ok", res)
}

func TestQueueFull(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(&agents.Options{QueueSize: 2})
	shutdown(t, c)
	require.Equal(t, 2, c.QueueSize())
	g := newGate()
	require.NoError(t, c.Register("a", g.handler, nil))
	running := sendAsync(context.Background(), c, "a", "m0")
	g.waitEntered(t, "m0")
	q1 := sendAsync(context.Background(), c, "a", "m1")
	q2 := sendAsync(context.Background(), c, "a", "m2")
	eventually(t, func() bool { return queueLength(c, "a") == 2 }, "two queued")

	_, err := c.Send(context.Background(), "a", agents.Message{Type: "m3"})
	require.ErrorIs(t, err, agents.ErrQueueFull)
	require.ErrorIs(t, err, agents.ErrNotDelivered)
	se := structured(t, err)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.Equal(t, agents.ReasonQueueFull, se.Details["reason"])
	assert.Equal(t, 2, se.Details["queueSize"])

	close(g.release)
	for _, ch := range []<-chan outcome{running, q1, q2} {
		require.NoError(t, wait(t, ch).err)
	}
}

func TestContextCancelWhileQueued(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	g := newGate()
	var ran []string
	require.NoError(t, c.Register("a", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		ran = append(ran, msg.Type)
		return g.handler(ctx, msg, ac)
	}, nil))
	first := sendAsync(context.Background(), c, "a", "first")
	g.waitEntered(t, "first")

	ctx, cancel := context.WithCancel(context.Background())
	queued := sendAsync(ctx, c, "a", "queued")
	last := sendAsync(context.Background(), c, "a", "last")
	eventually(t, func() bool { return queueLength(c, "a") == 2 }, "two queued")
	cancel()
	o := wait(t, queued)
	require.ErrorIs(t, o.err, context.Canceled)
	require.ErrorIs(t, o.err, agents.ErrNotDelivered)
	require.Equal(t, 1, queueLength(c, "a"), "the abandoned message left the queue")

	// A deadline gives TIMEOUT.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer dcancel()
	_, err := c.Send(dctx, "a", agents.Message{Type: "deadline"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, mcp.ErrTimeout, structured(t, err).Code)

	close(g.release)
	require.NoError(t, wait(t, first).err)
	g.waitEntered(t, "last")
	require.Equal(t, "done:last", wait(t, last).res)
	require.Equal(t, []string{"first", "last"}, ran, "the cancelled messages never ran")
}

func TestContextCancelWhileRunning(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	handlerDone := make(chan error, 1)
	started := make(chan struct{})
	require.NoError(t, c.Register("a", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		close(started)
		<-ctx.Done()
		handlerDone <- ctx.Err()
		return nil, ctx.Err()
	}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	o := sendAsync(ctx, c, "a", "x")
	<-started
	cancel()
	res := wait(t, o)
	require.ErrorIs(t, res.err, context.Canceled)
	require.NotErrorIs(t, res.err, agents.ErrNotDelivered, "the handler had started")
	require.ErrorIs(t, <-handlerDone, context.Canceled, "the handler's context was cancelled")
}

func TestHandlerContextCarriesCallerValues(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	type key struct{}
	require.NoError(t, c.Register("a", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		id, ok := agents.CurrentAgent(ctx)
		return fmt.Sprint(ctx.Value(key{}), " ", id, " ", ok, " ", ac.AgentID), nil
	}, nil))
	res, err := c.Send(context.WithValue(context.Background(), key{}, "v"), "a", agents.Message{Type: "x"})
	require.NoError(t, err)
	require.Equal(t, "v a true a", res)
	_, ok := agents.CurrentAgent(context.Background())
	require.False(t, ok)
}

func TestUnregisterWithPendingMessages(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	g := newGate()
	require.NoError(t, c.Register("a", g.handler, nil))
	inFlight := sendAsync(context.Background(), c, "a", "m0")
	g.waitEntered(t, "m0")
	p1 := sendAsync(context.Background(), c, "a", "m1")
	p2 := sendAsync(context.Background(), c, "a", "m2")
	eventually(t, func() bool { return queueLength(c, "a") == 2 }, "two queued")

	require.True(t, c.Unregister("a"))
	require.False(t, c.Unregister("a"))
	require.False(t, c.Has("a"))
	for _, ch := range []<-chan outcome{p1, p2} {
		err := wait(t, ch).err
		require.ErrorIs(t, err, agents.ErrUnregistered)
		require.ErrorIs(t, err, agents.ErrNotDelivered)
		assert.Equal(t, mcp.ErrNotFound, structured(t, err).Code)
	}
	// The in-flight message finishes; its handler saw its context cancelled.
	require.Equal(t, "cancelled:m0", wait(t, inFlight).res)

	_, err := c.Send(context.Background(), "a", agents.Message{Type: "x"})
	require.ErrorIs(t, err, agents.ErrAgentNotFound)
	// The id is free again.
	require.NoError(t, c.Register("a", g.handler, nil))
}

func TestShutdownDrain(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	g := newGate()
	require.NoError(t, c.Register("a", g.handler, nil))
	outs := []<-chan outcome{sendAsync(context.Background(), c, "a", "m0")}
	g.waitEntered(t, "m0")
	for i := 1; i <= 3; i++ {
		outs = append(outs, sendAsync(context.Background(), c, "a", fmt.Sprint("m", i)))
		eventually(t, func() bool { return queueLength(c, "a") == i }, "queued")
	}

	done := make(chan error, 1)
	go func() { done <- c.Shutdown(context.Background(), agents.ShutdownDrain) }()
	eventually(t, func() bool { // an unknown agent: the probe never waits
		_, err := c.Send(context.Background(), "nope", agents.Message{Type: "late"})
		return errors.Is(err, agents.ErrShuttingDown)
	}, "Send refused after Shutdown")
	_, err := c.Send(context.Background(), "a", agents.Message{Type: "late"})
	require.ErrorIs(t, err, agents.ErrShuttingDown)
	require.ErrorIs(t, c.Register("b", g.handler, nil), agents.ErrShuttingDown)
	select {
	case <-done:
		t.Fatal("Shutdown returned before the queue drained")
	default:
	}

	close(g.release)
	for i, ch := range outs {
		o := wait(t, ch)
		require.NoError(t, o.err)
		require.Equal(t, fmt.Sprint("done:m", i), o.res)
	}
	require.NoError(t, <-done)
	st, ok := c.Agent("a")
	require.True(t, ok, "agents stay registered")
	require.EqualValues(t, 4, st.Processed)
	// Shutdown again is fine.
	require.NoError(t, c.Shutdown(context.Background(), agents.ShutdownDrain))
}

func TestShutdownReject(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	g := newGate()
	require.NoError(t, c.Register("a", g.handler, nil))
	inFlight := sendAsync(context.Background(), c, "a", "m0")
	g.waitEntered(t, "m0")
	q1 := sendAsync(context.Background(), c, "a", "m1")
	q2 := sendAsync(context.Background(), c, "a", "m2")
	eventually(t, func() bool { return queueLength(c, "a") == 2 }, "two queued")

	require.NoError(t, c.Shutdown(context.Background(), agents.ShutdownReject))
	for _, ch := range []<-chan outcome{q1, q2} {
		err := wait(t, ch).err
		require.ErrorIs(t, err, agents.ErrShuttingDown)
		require.ErrorIs(t, err, agents.ErrNotDelivered)
	}
	require.Equal(t, "cancelled:m0", wait(t, inFlight).res, "running handlers see their context cancelled")

	_, err := c.Send(context.Background(), "a", agents.Message{Type: "x"})
	require.ErrorIs(t, err, agents.ErrShuttingDown)
	require.Equal(t, mcp.ErrInternal, structured(t, err).Code)
	require.Equal(t, agents.ReasonShuttingDown, structured(t, err).Details["reason"])
}

func TestShutdownDeadline(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	release := make(chan struct{})
	var sawCancel atomic.Bool
	require.NoError(t, c.Register("a", func(ctx context.Context, msg agents.Message, _ *agents.AgentContext) (any, error) {
		<-ctx.Done() // stops only when Shutdown gives up draining
		sawCancel.Store(true)
		<-release // and even then takes its time
		return nil, nil
	}, nil))
	inFlight := sendAsync(context.Background(), c, "a", "m0")
	eventually(t, func() bool { st, _ := c.Agent("a"); return st.Busy }, "running")
	queued := sendAsync(context.Background(), c, "a", "m1")
	eventually(t, func() bool { return queueLength(c, "a") == 1 }, "queued")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, c.Shutdown(ctx, agents.ShutdownDrain), context.DeadlineExceeded)
	require.ErrorIs(t, wait(t, queued).err, agents.ErrShuttingDown)
	eventually(t, sawCancel.Load, "handler context cancelled")
	close(release)
	require.NoError(t, wait(t, inFlight).err)
	require.NoError(t, c.Shutdown(context.Background(), agents.ShutdownDrain), "waits for the goroutines")
}

func TestShutdownInvalidMode(t *testing.T) {
	c := agents.NewCoordinator(nil)
	require.Error(t, c.Shutdown(context.Background(), 0))
	require.True(t, c.Has("x") == false)
	require.NoError(t, c.Register("x", func(context.Context, agents.Message, *agents.AgentContext) (any, error) { return nil, nil }, nil),
		"an invalid mode shuts nothing down")
	require.NoError(t, c.Shutdown(context.Background(), agents.ShutdownReject))
	assert.Equal(t, "drain", agents.ShutdownDrain.String())
	assert.Equal(t, "reject", agents.ShutdownReject.String())
}

func TestDelegation(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(&agents.Options{MaxDelegationDepth: 3})
	shutdown(t, c)
	// Each agent forwards to the agent named in its payload list.
	forward := func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		route := msg.Payload.([]string)
		if len(route) == 0 {
			return agents.DelegationChain(ctx), nil
		}
		return ac.Coordinator.Send(ctx, route[0], agents.Message{Type: "fwd", Payload: route[1:], SourceAgentID: ac.AgentID})
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		require.NoError(t, c.Register(id, forward, nil))
	}
	res, err := c.Send(context.Background(), "a", agents.Message{Type: "fwd", Payload: []string{"b", "c"}})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, res)

	_, err = c.Send(context.Background(), "a", agents.Message{Type: "fwd", Payload: []string{"a"}})
	require.ErrorIs(t, err, agents.ErrDelegationCycle, "an agent waiting for itself")
	_, err = c.Send(context.Background(), "a", agents.Message{Type: "fwd", Payload: []string{"b", "a"}})
	require.ErrorIs(t, err, agents.ErrDelegationCycle)
	require.Equal(t, []any{"a", "b"}, toAny(structured(t, err).Details["delegationChain"]))

	_, err = c.Send(context.Background(), "a", agents.Message{Type: "fwd", Payload: []string{"b", "c", "d"}})
	require.ErrorIs(t, err, agents.ErrDelegationDepth)
	se := structured(t, err)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.Equal(t, agents.ReasonDelegationDepth, se.Details["reason"])
}

func toAny(v any) []any {
	ss, _ := v.([]string)
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func TestMiddleware(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	var trace []string
	mw := func(name string) agents.Middleware {
		return func(next agents.Handler) agents.Handler {
			return func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
				trace = append(trace, name+">"+ac.AgentID)
				res, err := next(ctx, msg, ac)
				trace = append(trace, "<"+name)
				return res, err
			}
		}
	}
	h := func(_ context.Context, msg agents.Message, _ *agents.AgentContext) (any, error) {
		trace = append(trace, "handler")
		return nil, nil
	}
	require.NoError(t, c.Register("early", h, nil))
	c.Use(mw("outer"), nil)
	c.Use(mw("inner"))
	require.NoError(t, c.Register("late", h, nil))
	for _, id := range []string{"early", "late"} {
		trace = nil
		_, err := c.Send(context.Background(), id, agents.Message{Type: "x"})
		require.NoError(t, err)
		require.Equal(t, []string{"outer>" + id, "inner>" + id, "handler", "<inner", "<outer"}, trace)
	}
}

func TestAgentsListing(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c := agents.NewCoordinator(&agents.Options{Now: func() time.Time { return now }})
	shutdown(t, c)
	h := func(context.Context, agents.Message, *agents.AgentContext) (any, error) { return nil, nil }
	info := &agents.AgentInfo{Name: "B", Capabilities: []string{"x"}}
	require.NoError(t, c.Register("b", h, info))
	info.Capabilities[0] = "mutated"
	require.NoError(t, c.Register("a", h, nil))
	list := c.Agents()
	require.Len(t, list, 2)
	require.Equal(t, "a", list[0].ID)
	require.Equal(t, "b", list[1].ID)
	require.Equal(t, []string{"x"}, list[1].Info.Capabilities, "the info was copied")
	require.Equal(t, now, list[1].RegisteredAt)
	require.True(t, list[1].LastActivity.IsZero())
	_, err := c.Send(context.Background(), "b", agents.Message{Type: "x"})
	require.NoError(t, err)
	st, _ := c.Agent("b")
	require.Equal(t, now, st.LastActivity)
	require.Equal(t, 2, st.StateBytes, "{}")
}

// An agent's goroutine ends by itself after IdleTimeout: no Shutdown needed.
func TestIdleWorkerEnds(t *testing.T) {
	noLeaks(t)
	for _, idle := range []time.Duration{-1, 5 * time.Millisecond} {
		c := agents.NewCoordinator(&agents.Options{IdleTimeout: idle})
		require.NoError(t, c.Register("a", func(context.Context, agents.Message, *agents.AgentContext) (any, error) { return 1, nil }, nil))
		for range 3 {
			res, err := c.Send(context.Background(), "a", agents.Message{Type: "x"})
			require.NoError(t, err)
			require.Equal(t, 1, res)
		}
	}
}

// A handler that ends its goroutine (t.FailNow in a test handler does)
// fails its message; the agent goes on with the next.
func TestHandlerGoexit(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(&agents.Options{Logger: discardLogger()})
	shutdown(t, c)
	g := newGate()
	require.NoError(t, c.Register("a", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		switch msg.Type {
		case "block":
			return g.handler(ctx, msg, ac)
		case "exit":
			_ = ac.State.Set("k", 1)
			runtime.Goexit()
		}
		return "ok", nil
	}, nil))
	first := sendAsync(context.Background(), c, "a", "block")
	g.waitEntered(t, "block")
	exit := sendAsync(context.Background(), c, "a", "exit")
	eventually(t, func() bool { return queueLength(c, "a") == 1 }, "queued")
	next := sendAsync(context.Background(), c, "a", "next")
	eventually(t, func() bool { return queueLength(c, "a") == 2 }, "queued")
	close(g.release)
	require.NoError(t, wait(t, first).err)
	err := wait(t, exit).err
	require.ErrorIs(t, err, agents.ErrHandlerPanic)
	require.Equal(t, "ok", wait(t, next).res)
	st, _ := c.State("a")
	require.Empty(t, st)
	status, _ := c.Agent("a")
	require.EqualValues(t, 3, status.Processed)
	require.EqualValues(t, 1, status.Failed)
	// Goexit with an empty queue: the next Send starts a new goroutine.
	_, err = c.Send(context.Background(), "a", agents.Message{Type: "exit"})
	require.ErrorIs(t, err, agents.ErrHandlerPanic)
	res, err := c.Send(context.Background(), "a", agents.Message{Type: "again"})
	require.NoError(t, err)
	require.Equal(t, "ok", res)
}
