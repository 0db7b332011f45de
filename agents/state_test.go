package agents_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
)

// setter is a handler that applies the payload's operations to the state.
type op struct {
	Set    map[string]any
	Delete []string
	Fail   bool
}

func setter(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
	o := msg.Payload.(op)
	for k, v := range o.Set {
		if err := ac.State.Set(k, v); err != nil {
			return nil, err
		}
	}
	for _, k := range o.Delete {
		ac.State.Delete(k)
	}
	if o.Fail {
		return nil, errors.New("failed on purpose")
	}
	return ac.State.Size(), nil
}

func TestStateBound(t *testing.T) {
	noLeaks(t)
	var changes []map[string]any
	c := agents.NewCoordinator(&agents.Options{
		MaxStateBytes: 64,
		OnStateChange: func(id string, st map[string]any) { changes = append(changes, st) },
	})
	shutdown(t, c)
	require.Equal(t, 64, c.MaxStateBytes())
	require.NoError(t, c.Register("a", setter, nil))
	send := func(o op) (any, error) {
		return c.Send(context.Background(), "a", agents.Message{Type: "op", Payload: o})
	}

	size, err := send(op{Set: map[string]any{"k": "small"}})
	require.NoError(t, err)
	require.Equal(t, len(`{"k":"small"}`), size)

	// A state of exactly maxStateBytes is allowed.
	fill := strings.Repeat("x", 64-len(`{"k":""}`))
	_, err = send(op{Set: map[string]any{"k": fill}})
	require.NoError(t, err, "a state of exactly maxStateBytes fits")

	_, err = send(op{Set: map[string]any{"k": "small", "big": strings.Repeat("y", 100)}})
	require.ErrorIs(t, err, agents.ErrStateTooLarge)
	require.NotErrorIs(t, err, agents.ErrNotDelivered)
	se := structured(t, err)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.Contains(t, se.Message, "maxStateBytes")
	assert.Equal(t, "maxStateBytes", se.Details["limit"])
	assert.Equal(t, 64, se.Details["maxStateBytes"])
	assert.Greater(t, se.Details["stateBytes"], 64)

	st, ok := c.State("a")
	require.True(t, ok)
	require.Equal(t, map[string]any{"k": fill}, st, "the previous state is kept")
	require.Len(t, changes, 2, "no OnStateChange for discarded changes")

	// A change that shrinks an oversized intermediate state is fine.
	_, err = send(op{Set: map[string]any{"big": strings.Repeat("y", 100)}, Delete: []string{"big"}})
	require.NoError(t, err)
	stat, _ := c.Agent("a")
	assert.Equal(t, 64, stat.StateBytes)
	assert.EqualValues(t, 1, stat.Failed)
}

func TestStateRollbackOnError(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	require.NoError(t, c.Register("a", setter, nil))
	_, err := c.Send(context.Background(), "a", agents.Message{Type: "op", Payload: op{Set: map[string]any{"a": 1}}})
	require.NoError(t, err)
	_, err = c.Send(context.Background(), "a", agents.Message{Type: "op", Payload: op{Set: map[string]any{"a": 2, "b": 3}, Delete: []string{"a"}, Fail: true}})
	require.Error(t, err)
	st, _ := c.State("a")
	require.Equal(t, map[string]any{"a": 1.0}, st)
}

func TestOnStateChangeGetsCopy(t *testing.T) {
	noLeaks(t)
	var mu sync.Mutex
	var calls []map[string]any
	c := agents.NewCoordinator(&agents.Options{OnStateChange: func(id string, st map[string]any) {
		assert.Equal(t, "a", id)
		mu.Lock()
		calls = append(calls, st)
		mu.Unlock()
		st["injected"] = true // must not reach the agent
		if m, ok := st["doc"].(map[string]any); ok {
			m["x"] = "hook"
		}
	}})
	shutdown(t, c)
	require.NoError(t, c.Register("a", setter, nil))
	send := func(o op) {
		_, err := c.Send(context.Background(), "a", agents.Message{Type: "op", Payload: o})
		require.NoError(t, err)
	}
	send(op{Set: map[string]any{"doc": map[string]any{"x": "orig"}}})
	send(op{Set: map[string]any{"doc": map[string]any{"x": "orig"}}}) // same value: no change
	send(op{})                                                        // no change
	send(op{Delete: []string{"missing"}})                             // no change
	send(op{Delete: []string{"doc"}})

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 2, "called only when the state changed")
	st, _ := c.State("a")
	require.Empty(t, st)
	require.NotContains(t, calls[1], "doc")
}

func TestCallerDataNotShared(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	require.NoError(t, c.Register("a", func(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		switch msg.Type {
		case "store":
			return nil, ac.State.Set("doc", msg.Payload)
		case "edit": // change what Get returned, then store it
			doc, _ := ac.State.Get("doc")
			doc.(map[string]any)["name"] = "edited"
			doc.(map[string]any)["list"].([]any)[0] = "edited"
			return nil, ac.State.Set("doc", doc)
		}
		return nil, nil
	}, nil))
	payload := map[string]any{"name": "orig", "list": []any{"orig"}}
	_, err := c.Send(context.Background(), "a", agents.Message{Type: "store", Payload: payload})
	require.NoError(t, err)
	payload["name"] = "caller changed it later"
	_, err = c.Send(context.Background(), "a", agents.Message{Type: "edit"})
	require.NoError(t, err)

	require.Equal(t, map[string]any{"name": "caller changed it later", "list": []any{"orig"}}, payload,
		"the coordinator never writes to caller data")
	st, _ := c.State("a")
	require.Equal(t, map[string]any{"doc": map[string]any{"name": "edited", "list": []any{"edited"}}}, st)

	// State returns a deep copy.
	st["doc"].(map[string]any)["name"] = "mutated copy"
	again, _ := c.State("a")
	require.Equal(t, "edited", again["doc"].(map[string]any)["name"])

	_, ok := c.State("nope")
	require.False(t, ok)
}

// The size Coordinator checks is exactly the length of the compact JSON
// encoding of the state object.
func TestStateSizeIsEncodedSize(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	type sized struct {
		Size    int
		Encoded int
		Keys    []string
		Len     int
	}
	require.NoError(t, c.Register("a", func(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		o := msg.Payload.(op)
		for k, v := range o.Set {
			require.NoError(t, ac.State.Set(k, v))
		}
		for _, k := range o.Delete {
			ac.State.Delete(k)
		}
		enc, err := json.Marshal(ac.State.Snapshot())
		require.NoError(t, err)
		return sized{Size: ac.State.Size(), Encoded: len(enc), Keys: ac.State.Keys(), Len: ac.State.Len()}, nil
	}, nil))
	steps := []op{
		{},
		{Set: map[string]any{"a": 1}},
		{Set: map[string]any{"b": "x\u2028\"<>&\x01", "é": []int{1, 2}, "c": nil}},
		{Set: map[string]any{"a": map[string]any{"z": true, "y": 1.5}}, Delete: []string{"b"}},
		{Set: map[string]any{"\u2028k": jsontext.Value(`{"raw" : [1, 2]}`)}},
		{Set: map[string]any{"\x01\n\"\\\t<&>\x1f\b\f\r": "v"}},
		{Delete: []string{"a", "é", "c", "\u2028k", "\x01\n\"\\\t<&>\x1f\b\f\r"}},
	}
	for i, o := range steps {
		res, err := c.Send(context.Background(), "a", agents.Message{Type: "op", Payload: o})
		require.NoError(t, err, i)
		s := res.(sized)
		assert.Equal(t, s.Encoded, s.Size, "step %d", i)
		assert.Equal(t, len(s.Keys), s.Len, "step %d", i)
		stat, _ := c.Agent("a")
		assert.Equal(t, s.Size, stat.StateBytes, "step %d: committed size", i)
		assert.Equal(t, s.Len, stat.StateKeys, "step %d", i)
	}
}

func TestStateAPI(t *testing.T) {
	noLeaks(t)
	c := agents.NewCoordinator(nil)
	shutdown(t, c)
	var kept *agents.State
	require.NoError(t, c.Register("a", func(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		s := ac.State
		kept = s
		if err := s.Set("bad", make(chan int)); err == nil {
			return nil, errors.New("a channel was accepted")
		}
		if err := s.Set("\xff", 1); err == nil {
			return nil, errors.New("an invalid UTF-8 key was accepted")
		}
		if msg.Type == "first" {
			type point struct{ X, Y int }
			if err := s.Set("p", point{1, 2}); err != nil {
				return nil, err
			}
			return nil, s.Set("n", 7)
		}
		var p struct{ X, Y int }
		ok, err := s.Decode("p", &p)
		if !ok || err != nil || p.X != 1 || p.Y != 2 {
			return nil, errors.New("decode failed")
		}
		n, _ := s.Get("n")
		raw, _ := s.Raw("p")
		_, missing := s.Get("missing")
		return []any{n, string(raw), missing, s.Delete("n"), s.Delete("n"), s.Keys()}, nil
	}, nil))
	_, err := c.Send(context.Background(), "a", agents.Message{Type: "first"})
	require.NoError(t, err)
	res, err := c.Send(context.Background(), "a", agents.Message{Type: "second"})
	require.NoError(t, err)
	require.Equal(t, []any{7.0, `{"X":1,"Y":2}`, false, true, false, []string{"p"}}, res)

	// After its handler returned, a State is closed.
	require.ErrorIs(t, kept.Set("x", 1), agents.ErrStateClosed)
	_, ok := kept.Get("p")
	require.False(t, ok)
	require.Empty(t, kept.Keys())
	st, _ := c.State("a")
	require.Equal(t, map[string]any{"p": map[string]any{"X": 1.0, "Y": 2.0}}, st)
}

func TestDecodePayload(t *testing.T) {
	type in struct {
		Name string `json:"name"`
	}
	for _, m := range []agents.Message{
		{Payload: jsontext.Value(`{"name":"raw"}`)},
		{Payload: map[string]any{"name": "raw"}},
		{Payload: in{Name: "raw"}},
	} {
		var v in
		require.NoError(t, m.DecodePayload(&v))
		require.Equal(t, "raw", v.Name)
	}
	v := in{Name: "kept"}
	require.NoError(t, agents.Message{}.DecodePayload(&v))
	require.Equal(t, "kept", v.Name)
	require.Error(t, agents.Message{Payload: make(chan int)}.DecodePayload(&v))
}
