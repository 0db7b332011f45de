//go:build !keel_omit2025

package mcp

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

// notifyingTools is a ToolSource that reports changes (ChangeNotifier).
type notifyingTools struct {
	mu        sync.Mutex
	listeners []func()
}

func (n *notifyingTools) ListTools(context.Context) ([]*Tool, error) { return nil, nil }
func (n *notifyingTools) CallTool(context.Context, *ToolCall) (*CallToolResult, error) {
	return &CallToolResult{}, nil
}
func (n *notifyingTools) OnChange(f func()) {
	n.mu.Lock()
	n.listeners = append(n.listeners, f)
	n.mu.Unlock()
}
func (n *notifyingTools) change() {
	n.mu.Lock()
	ls := n.listeners
	n.mu.Unlock()
	for _, f := range ls {
		f()
	}
}

// testSession returns a session of a server over tools, in state, whose
// output the returned transport reads.
func testSession(t *testing.T, tools ToolSource, state sessionState) (*Server, *Session, transport.Transport) {
	t.Helper()
	ct, st := transport.NewPipe(nil)
	t.Cleanup(func() { ct.Close(); st.Close() })
	srv := NewServer(&ServerOptions{Tools: tools, Logger: slog.New(slog.DiscardHandler)})
	ss := srv.newSession(st, false)
	ss.state.Store(int32(state))
	srv.hub.add(ss)
	return srv, ss, ct
}

// readAll returns the messages the session wrote within a short while.
func readAll(t *testing.T, ct transport.Transport) []string {
	t.Helper()
	var out []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		msg, err := ct.Read(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, string(msg))
	}
}

func TestListChangedCoalescesPerSession(t *testing.T) {
	tools := &notifyingTools{}
	srv, ss, ct := testSession(t, tools, stateRunning)
	assert.True(t, srv.initializeResult(latestVersion).Capabilities.Tools.ListChanged, "a ChangeNotifier source declares listChanged")

	// While a send is under way, changes only mark the session ...
	state2025(ss).notes.sending = true
	tools.change()
	tools.change()
	tools.change()
	srv.hub.changed(listPrompts) // not declared: never sent
	// ... and the sender, when it looks again, sends one notification.
	ss.sendNotes()
	assert.Equal(t, []string{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`}, readAll(t, ct))
	assert.False(t, state2025(ss).notes.sending)

	// One change later: one more notification, from the sender goroutine.
	tools.change()
	assert.Equal(t, []string{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`}, readAll(t, ct))
}

func TestListChangedOnlyWhenRunning(t *testing.T) {
	tools := &notifyingTools{}
	_, ss, ct := testSession(t, tools, stateInitializing)
	tools.change()
	assert.Empty(t, readAll(t, ct), "nothing before RUNNING")
	ss.state.Store(int32(stateClosed))
	tools.change()
	assert.Empty(t, readAll(t, ct), "nothing after CLOSED")
	state2025(ss).notes.mu.Lock()
	defer state2025(ss).notes.mu.Unlock()
	assert.Zero(t, state2025(ss).notes.dirty, "dropped, not kept for later")
}

func TestListChangedNotDeclaredWithoutNotifier(t *testing.T) {
	srv := NewServer(&ServerOptions{Tools: struct{ ToolSource }{&notifyingTools{}}, Logger: slog.New(slog.DiscardHandler)})
	caps := srv.initializeResult(latestVersion).Capabilities
	require.NotNil(t, caps.Tools)
	assert.False(t, caps.Tools.ListChanged)
	assert.Nil(t, caps.Resources)
	assert.Nil(t, caps.Prompts)
	assert.Nil(t, caps.Completions)
}

func TestResourceUpdatesReachSubscribersOnce(t *testing.T) {
	srv, ss, ct := testSession(t, nil, stateRunning)
	_, other, otherCT := testSession(t, nil, stateRunning)
	srv.hub.add(other) // a second session of the same server

	require.Nil(t, srv.hub.subscribe(ss, "file:///dir"))
	require.Nil(t, srv.hub.subscribe(ss, "file:///dir/a.txt"))
	state2025(ss).notes.sending = true
	srv.hub.updated("file:///dir/a.txt") // both subscriptions cover it: one notification
	srv.hub.updated("file:///dir/a.txt") // coalesced
	srv.hub.updated("file:///dir/b.txt")
	srv.hub.updated("file:///dirx") // not below file:///dir
	ss.sendNotes()
	assert.Equal(t, []string{
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///dir/a.txt"}}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///dir/b.txt"}}`,
	}, readAll(t, ct))
	assert.Empty(t, readAll(t, otherCT), "not subscribed: nothing")

	srv.hub.unsubscribe(ss, "file:///dir")
	srv.hub.updated("file:///dir/b.txt")
	assert.Empty(t, readAll(t, ct))

	srv.hub.remove(ss)
	srv.hub.mu.Lock()
	assert.Empty(t, srv.hub.subs.byURI, "a closed session's subscriptions are dropped")
	srv.hub.mu.Unlock()
}

func TestSubscriptionLimit(t *testing.T) {
	srv, ss, _ := testSession(t, nil, stateRunning)
	srv.opts.MaxSubscriptionBytes = 1 << 30 // the count bound alone
	for i := range maxSubscriptions {
		require.Nil(t, srv.hub.subscribe(ss, "test://r/"+strconv.Itoa(i)))
	}
	e := srv.hub.subscribe(ss, "test://one-too-many")
	require.NotNil(t, e)
	assert.Contains(t, e.Message, "maxSubscriptions")
	assert.Nil(t, srv.hub.subscribe(ss, "test://r/0"), "an existing subscription is fine")
}

// TestListChangedConcurrentChanges: changes from many goroutines while the
// sender runs never lose the last change and send at most one
// notification per change (for -race).
func TestListChangedConcurrentChanges(t *testing.T) {
	tools := &notifyingTools{}
	_, ss, ct := testSession(t, tools, stateRunning)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				tools.change()
			}
		}()
	}
	wg.Wait()
	// The pipe holds what the sender wrote meanwhile; a sender blocked on
	// it coalesces the changes that follow.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	first, err := ct.Read(ctx)
	cancel()
	require.NoError(t, err)
	got := append([]string{string(first)}, readAll(t, ct)...)
	assert.LessOrEqual(t, len(got), 200)
	state2025(ss).notes.mu.Lock()
	assert.False(t, state2025(ss).notes.sending)
	assert.Zero(t, state2025(ss).notes.dirty)
	state2025(ss).notes.mu.Unlock()
}
