package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A closed table (the transport ended the requests it handed over) ends
// the requests in flight and every request added afterwards.
func TestRequestTableClose(t *testing.T) {
	var tab requestTable
	newFlight := func(key string) *inflight {
		f := &inflight{tab: &tab, key: key}
		f.start(context.Background())
		return f
	}
	before := newFlight("1")
	require.Nil(t, tab.add(before, 0))
	require.NoError(t, before.ctx.Err())
	tab.close()
	assert.ErrorIs(t, before.ctx.Err(), context.Canceled)
	after := newFlight("2")
	require.Nil(t, tab.add(after, 0))
	assert.ErrorIs(t, after.ctx.Err(), context.Canceled, "added after the close")
}
