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
	require.Nil(t, tab.add(before, 0))
	require.NoError(t, before.ctx.Err())
	tab.close()
	assert.ErrorIs(t, before.ctx.Err(), context.Canceled)
	after := newFlight("2")
	require.Nil(t, tab.add(after, 0))
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
			require.Nil(t, tab.add(f, 0))
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

// A request whose parent ends at its deadline: a linked request (a
// 2026-07-28 POST's, ServeRequest's) ends with the parent's error, so a
// handler sees context.DeadlineExceeded and a tool's wait answers TIMEOUT;
// one its table watches (a connection's) is aborted by the table, with
// context.Canceled, and its cause is the connection's end.
func TestRequestEndsWithItsParentsDeadline(t *testing.T) {
	for _, watched := range []bool{false, true} {
		var tab requestTable
		parent, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if watched {
			tab.watch(parent)
		}
		f := &inflight{tab: &tab, key: "1"}
		f.start(parent, tab.watched)
		require.Nil(t, tab.add(f, 0))
		f.follow(tab.watched)
		select {
		case <-f.ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the request did not end with its parent")
		}
		want := context.DeadlineExceeded
		if watched {
			want = context.Canceled
		}
		assert.Equal(t, want, f.ctx.Err(), "watched=%v", watched)
		f.end()
		cancel()
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
		require.Nil(t, tab.add(f, 0))
		f.follow(tab.watched)
		assert.ErrorIs(t, f.ctx.Err(), context.Canceled, "watched=%v", watched)
		f.end()
	}
}

// afterFuncContext is a context that ends by itself and offers AfterFunc,
// as a context of another package may.
type afterFuncContext struct {
	doneContext
	fns chan func()
}

func (c *afterFuncContext) AfterFunc(f func()) func() bool {
	c.fns <- f
	return func() bool { return true }
}

// A request whose parent offers AfterFunc registers with it, and ends when
// the parent calls what it registered.
func TestRequestFollowsAfterFuncParent(t *testing.T) {
	parent := &afterFuncContext{doneContext: doneContext{Context: context.Background(), done: make(chan struct{})}, fns: make(chan func(), 1)}
	var tab requestTable
	f := &inflight{tab: &tab, key: "1"}
	f.start(parent, tab.watched)
	require.Nil(t, tab.add(f, 0))
	f.follow(tab.watched)
	var registered func()
	select {
	case registered = <-parent.fns:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing registered with the parent")
	}
	require.NoError(t, f.ctx.Err())
	close(parent.done)
	registered()
	assert.ErrorIs(t, f.ctx.Err(), context.Canceled)
	f.end()
}

// doneContext is a context that ends by itself and offers nothing else.
type doneContext struct {
	context.Context
	done chan struct{}
}

func (c *doneContext) Done() <-chan struct{} { return c.done }

func (c *doneContext) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// A request whose parent is neither a context.WithCancel nor offers
// AfterFunc still ends with it.
func TestRequestFollowsOtherParent(t *testing.T) {
	parent := &doneContext{Context: context.Background(), done: make(chan struct{})}
	var tab requestTable
	f := &inflight{tab: &tab, key: "1"}
	f.start(parent, tab.watched)
	require.Nil(t, tab.add(f, 0))
	f.follow(tab.watched)
	require.NoError(t, f.ctx.Err())
	close(parent.done)
	select {
	case <-f.ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not end with its parent")
	}
	f.end()
}
