package aacp

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
)

func newTestCoordinator(t *testing.T, opts *Options) (*Coordinator, *MemoryStore) {
	t.Helper()
	st := NewMemoryStore()
	o := Options{PollInterval: 2 * time.Millisecond, Logger: quietLogger}
	if opts != nil {
		o = *opts
		if o.Logger == nil {
			o.Logger = quietLogger
		}
	}
	c := NewCoordinator(agents.NewCoordinator(&agents.Options{Logger: quietLogger}), st, &o)
	t.Cleanup(func() {
		c.Close(bg)
		c.Shutdown(bg, agents.ShutdownReject)
	})
	return c, st
}

func TestCoordinatorSendRequest(t *testing.T) {
	c, st := newTestCoordinator(t, nil)
	var seen []agents.Message
	var mu sync.Mutex
	require.NoError(t, c.Register("adder", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		mu.Lock()
		seen = append(seen, msg)
		mu.Unlock()
		var in struct{ A, B int }
		if err := msg.DecodePayload(&in); err != nil {
			return nil, err
		}
		// State works as with plain Send.
		var n float64
		if _, err := ac.State.Decode("calls", &n); err != nil {
			return nil, err
		}
		return map[string]int{"sum": in.A + in.B}, ac.State.Set("calls", n+1)
	}, nil))
	require.NoError(t, c.Start(bg))

	res, err := c.SendRequest(bg, "adder", map[string]int{"A": 2, "B": 3})
	require.NoError(t, err)
	assert.JSONEq(t, `{"sum":5}`, string(res))
	id, err := c.SendReliable(bg, "adder", map[string]int{"A": 1, "B": 1})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s, err := c.Node().Status(bg, id)
		return err == nil && s.Outcome == OutcomeCompleted
	}, 2*time.Second, time.Millisecond)

	mu.Lock()
	require.Len(t, seen, 2)
	assert.Equal(t, "REQUEST", seen[0].Type)
	assert.Equal(t, "EVENT", seen[1].Type)
	assert.Equal(t, c.Node().ID(), seen[0].SourceAgentID)
	assert.True(t, IsUUIDv4(seen[0].Meta[MetaRequestID]))
	assert.True(t, IsUUIDv4(seen[0].Meta[MetaMessageID]))
	assert.Equal(t, "1", seen[0].Meta[MetaSeq])
	_, isRaw := seen[0].Payload.(json.RawMessage)
	assert.True(t, isRaw, "the payload reaches the handler as raw JSON")
	mu.Unlock()
	state, _ := c.State("adder")
	assert.Equal(t, map[string]any{"calls": float64(2)}, state)

	// Plain Send is untouched.
	plain, err := c.Send(bg, "adder", agents.Message{Type: "x", Payload: map[string]int{"A": 1, "B": 2}})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"sum": 3}, plain)
	pending, err := st.ListPendingRequests(bg, time.Time{})
	require.NoError(t, err)
	assert.Empty(t, pending)
}

// A request from an agent's handler to another agent: its source is the
// calling agent; a request to the agent itself is a delegation cycle, which
// fails at once with protocol_error instead of waiting forever.
func TestCoordinatorDelegation(t *testing.T) {
	c, _ := newTestCoordinator(t, nil)
	require.NoError(t, c.Register("inner", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		return msg.SourceAgentID, nil
	}, nil))
	require.NoError(t, c.Register("outer", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		target := "inner"
		if msg.Type == "EVENT" {
			target = "outer"
		}
		return c.SendRequest(ctx, target, 1)
	}, nil))
	require.NoError(t, c.Start(bg))
	res, err := c.SendRequest(bg, "outer", 1)
	require.NoError(t, err)
	assert.JSONEq(t, `"outer"`, string(res), "inner saw outer as the source")

	_, err = c.Node().SendReliable(bg, "client", "outer", 1) // outer → outer: a cycle
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pending, err := c.Node().Store().ListPendingRequests(bg, time.Time{})
		return err == nil && len(pending) == 0
	}, 2*time.Second, time.Millisecond)
}

// The caller stops waiting (UNKNOWN) while the agent's handler runs on; the
// handler's late result is recorded through the middleware.
func TestCoordinatorLateCompletion(t *testing.T) {
	c, st := newTestCoordinator(t, nil)
	release := make(chan struct{})
	var runs atomic.Int32
	require.NoError(t, c.Register("slow", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		runs.Add(1)
		<-release
		return "finally", nil
	}, nil))
	require.NoError(t, c.Start(bg))
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	defer cancel()
	_, err := c.SendRequest(ctx, "slow", 1)
	var ue *UnknownOutcomeError
	require.ErrorAs(t, err, &ue)
	rec, err := st.GetRequestRecord(bg, ue.RequestID)
	require.NoError(t, err)
	assert.Equal(t, OutcomeUnknown, rec.Status)
	close(release)
	actx, acancel := context.WithTimeout(bg, 5*time.Second)
	defer acancel()
	res, err := c.Node().Await(actx, ue.RequestID)
	require.NoError(t, err)
	assert.Equal(t, OutcomeCompleted, res.Outcome)
	assert.Equal(t, CompletionLateCompleted, res.Completion)
	assert.JSONEq(t, `"finally"`, string(res.Result))
	assert.Equal(t, int32(1), runs.Load())
}

// What the coordinator adds after the handler (here: a state over its
// bound) is part of the outcome.
func TestCoordinatorStateTooLarge(t *testing.T) {
	st := NewMemoryStore()
	ac := agents.NewCoordinator(&agents.Options{Logger: quietLogger, MaxStateBytes: 32})
	c := NewCoordinator(ac, st, &Options{PollInterval: -1, Logger: quietLogger})
	t.Cleanup(func() { c.Close(bg); c.Shutdown(bg, agents.ShutdownReject) })
	require.NoError(t, c.Register("big", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		return "ok", ac.State.Set("blob", "0123456789012345678901234567890123456789")
	}, nil))
	require.NoError(t, c.Start(bg))
	_, err := c.SendRequest(bg, "big", 1)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
}

// A message to an agent registered later (AllowUnknownTargets) is
// redelivered from the ledger once the agent exists.
func TestCoordinatorAgentRegisteredLater(t *testing.T) {
	c, _ := newTestCoordinator(t, &Options{PollInterval: 2 * time.Millisecond, RetransmitTimeout: 5 * time.Millisecond,
		AllowUnknownTargets: true,
		Retry:               &RetryPolicy{MaxAttempts: 50, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
	require.NoError(t, c.Start(bg))
	id, err := c.SendReliable(bg, "late", "hello")
	require.NoError(t, err)
	var got atomic.Value
	require.NoError(t, c.Register("late", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		got.Store(string(msg.Payload.(json.RawMessage)))
		return nil, nil
	}, nil))
	require.Eventually(t, func() bool {
		s, err := c.Node().Status(bg, id)
		return err == nil && s.Outcome == OutcomeCompleted
	}, 5*time.Second, 2*time.Millisecond)
	assert.Equal(t, `"hello"`, got.Load())
}
