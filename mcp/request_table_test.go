package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A closed table (the transport ended the requests it handed over) ends
// the requests in flight and every request added afterwards.
func TestRequestTableClose(t *testing.T) {
	var tab requestTable
	newFlight := func(key string) *inflight {
		f := &inflight{tab: &tab, key: key}
		f.start(context.Background(), nil)
		return f
	}
	before := newFlight("1")
	require.True(t, tab.add(before))
	require.NoError(t, before.ctx.Err())
	tab.close()
	assert.ErrorIs(t, before.ctx.Err(), context.Canceled)
	after := newFlight("2")
	require.True(t, tab.add(after))
	assert.ErrorIs(t, after.ctx.Err(), context.Canceled, "added after the close")
}

// A request whose parent no table watches ends with the parent (its
// context is the parent's child); one whose parent the table watches is
// ended by the table, not by a registration of its own.
func TestRequestFollowsParent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		watched bool
	}{
		{"linked", false},
		{"watched", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tab requestTable
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.watched {
				tab.watch(parent)
			}
			f := &inflight{tab: &tab, key: "1"}
			f.start(parent, tab.watched)
			require.True(t, tab.add(f))
			f.follow(tab.watched)
			assert.Equal(t, !tc.watched, f.vals.linked)
			require.NoError(t, f.ctx.Err())
			cancel()
			select {
			case <-f.ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the request did not end with its parent")
			}
			assert.ErrorIs(t, f.ctx.Err(), context.Canceled)
			f.end()
		})
	}
}

// A request started under a parent that has ended already ends at once.
func TestRequestParentEndedBefore(t *testing.T) {
	for _, watched := range []bool{false, true} {
		var tab requestTable
		parent, cancel := context.WithCancel(context.Background())
		if watched {
			tab.watched = parent.Done() // as watch does, without its callback
		}
		cancel()
		f := &inflight{tab: &tab, key: "1"}
		f.start(parent, tab.watched)
		require.True(t, tab.add(f))
		f.follow(tab.watched)
		assert.ErrorIs(t, f.ctx.Err(), context.Canceled, "watched=%v", watched)
		f.end()
	}
}
