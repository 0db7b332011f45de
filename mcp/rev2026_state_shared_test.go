package mcp

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mapUsedStates is a UsedStateStore that the servers of a test share, as
// replicas share a database.
type mapUsedStates struct {
	mu   sync.Mutex
	ids  map[string]time.Time
	fail error
}

func (m *mapUsedStates) UseState(_ context.Context, id []byte, expiry time.Time, max int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.fail != nil:
		return m.fail
	case !m.ids[string(id)].IsZero():
		return ErrStateUsed
	case len(m.ids) >= max:
		return ErrTooManyUsedStates
	}
	m.ids[string(id)] = expiry
	return nil
}

// With a shared UsedStates, a state sealed by one server is accepted once
// by all of them together; the store's refusals map to the same -32602
// errors as the memory's, and a failing store refuses the state (logged).
func TestStateSingleUseShared(t *testing.T) {
	shared := &mapUsedStates{ids: map[string]time.Time{}}
	a, _ := stateServer(t, &ServerOptions{StateKey: oldSecret, StateSingleUse: true, UsedStates: shared, MaxUsedStates: 2})
	b, logs := stateServer(t, &ServerOptions{StateKey: oldSecret, StateSingleUse: true, UsedStates: shared, MaxUsedStates: 2})
	assert.Nil(t, a.states.used, "no memory of its own")

	wire := seal(a)
	_, e := open(b, wire)
	require.Nil(t, e, "accepted once, by another server")
	_, e = open(a, wire)
	require.NotNil(t, e, "then refused by every server")
	assert.Contains(t, e.Message, "used already")
	_, e = open(b, wire)
	require.NotNil(t, e)

	_, e = open(a, seal(a))
	require.Nil(t, e)
	_, e = open(b, seal(b))
	require.NotNil(t, e)
	assert.Contains(t, e.Message, "MaxUsedStates (2)")
	assert.Equal(t, usedStatesData{Limit: "MaxUsedStates", MaxUsedStates: 2}, e.Data)

	shared.mu.Lock()
	shared.fail = errors.New("database down")
	shared.mu.Unlock()
	_, e = open(b, seal(b))
	require.NotNil(t, e, "a store that fails refuses the state")
	assert.Contains(t, e.Message, "could not record it as used")
	assert.Contains(t, logs.String(), "database down")
	assert.Contains(t, logs.String(), `"reason":"used-state store failed"`)
}
