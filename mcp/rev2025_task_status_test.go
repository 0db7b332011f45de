//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"runtime"
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

// stalledStatusSession connects a client named name to srv whose end of
// the connection stops writing notifications/tasks/status once the
// session has joined its owner (a client that does not read them, such as
// an abandoned connection of a client that reconnected) until release is
// closed (nil: never). closeIt closes the client and waits for the
// server's Run to return.
func stalledStatusSession(t *testing.T, srv *mcp.Server, name string, release chan struct{}) (slow *stallingTransport, closeIt func()) {
	t.Helper()
	ctx := context.Background()
	ct, st := transport.NewPipe(nil)
	slow = &stallingTransport{Transport: st, only: `"notifications/tasks/status"`, release: release}
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), slow) }()
	copts, _ := statusOptions(name)
	sc := mcp.NewClient(copts)
	require.NoError(t, sc.Connect(ctx, mcptest.ValidateTransport(t, ct)))
	var once sync.Once
	closeIt = func() {
		once.Do(func() {
			sc.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Error("server Run did not return")
			}
		})
	}
	t.Cleanup(closeIt)
	_, err := sc.ListTasks(ctx, "") // joins the owner
	require.NoError(t, err)
	slow.stall.Store(true)
	return slow, closeIt
}

// A stalled session of the task's owner holds no pool slot: once another
// session of the owner sees "completed", the owner's next task is accepted
// at once, with MaxRunningPerOwner 1, although the stalled session's write
// of that status is still blocked.
func TestStalledSessionHoldsNoTaskSlot(t *testing.T) {
	ctx := context.Background()
	keys := []string{"a", "b", "c", "d"}
	release := map[string]chan struct{}{}
	for _, k := range keys {
		release[k] = make(chan struct{})
	}
	srv := mcp.NewServer(taskServerOptions(releaseTools(release), &mcp.TaskOptions{Owner: ownerByName, MaxRunningPerOwner: 1}))
	slow, _ := stalledStatusSession(t, srv, "alice/slow", nil)
	fast := dialStatus(t, srv, "alice/fast")

	created, err := fast.CallToolAsTask(ctx, "wait", map[string]string{"key": keys[0]}, time.Minute)
	require.NoError(t, err)
	for i, next := range keys[1:] {
		close(release[keys[i]])
		fast.waitStatus(t, created.Task.TaskID, mcp.TaskStatusCompleted)
		created, err = fast.CallToolAsTask(ctx, "wait", map[string]string{"key": next}, time.Minute)
		require.NoError(t, err, "the owner's next task is accepted right after its previous one was announced completed")
	}
	require.Eventually(t, slow.entered.Load, 5*time.Second, time.Millisecond, "the stalled session is sent the statuses too")
	close(release[keys[len(keys)-1]])
	fast.waitStatus(t, created.Task.TaskID, mcp.TaskStatusCompleted)
}

// The status sends of a stalled session end with the session: its
// backlog (here 19 statuses behind a blocked write, about 5 s at
// logSendTimeout each) is dropped when it closes, and once the clients
// are gone and the tasks stopped, no goroutine of the server is left.
func TestStalledSessionStatusSendsEndWithIt(t *testing.T) {
	ctx := context.Background()
	before := runtime.NumGoroutine()
	const n = 20
	release := map[string]chan struct{}{"all": make(chan struct{})}
	srv := mcp.NewServer(taskServerOptions(releaseTools(release), &mcp.TaskOptions{Owner: ownerByName}))
	slow, closeSlow := stalledStatusSession(t, srv, "alice/slow", nil)
	fast := dialStatus(t, srv, "alice/fast")
	ids := map[string]bool{}
	for range n {
		created, err := fast.CallToolAsTask(ctx, "wait", map[string]string{"key": "all"}, time.Minute)
		require.NoError(t, err)
		ids[created.Task.TaskID] = true
	}
	close(release["all"])
	for done := 0; done < n; {
		got := recv(t, fast.statuses, "the tasks' statuses")
		require.True(t, ids[got.TaskID])
		if got.Status == mcp.TaskStatusCompleted {
			done++
		}
	}
	require.Eventually(t, slow.entered.Load, 5*time.Second, time.Millisecond, "the stalled session's write is blocked")

	closed := time.Now()
	closeSlow()
	require.NoError(t, fast.Close())
	require.NoError(t, srv.StopTasks(ctx))
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) { // polled here: assert.Eventually runs goroutines of its own
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines left (%d before):\n%s", before, buf[:runtime.Stack(buf, true)])
		}
	}
	assert.Less(t, time.Since(closed), time.Duration(n-1)*250*time.Millisecond, "the backlog was dropped, not written out")
	require.Eventually(t, func() bool {
		sessions, owners := mcp.TaskOwnerCountsForTest(srv)
		return sessions == 0 && owners == 0
	}, 5*time.Second, time.Millisecond, "nothing held once the sessions ended")
}

// The statuses of a task reach a session in the order they changed, and
// none after the final one, under a burst of changes (a task that asks
// the client 20 times in a row: input_required, working, ..., completed):
// a later status may replace one not yet written, but an earlier one
// never follows a later one. The clock ticks at every reading, so that
// each change has its own lastUpdatedAt. A stalled session of the same
// owner changes nothing for the others.
func TestTaskStatusesKeepTheirOrder(t *testing.T) {
	ctx := context.Background()
	const rounds = 20
	ask := taskTools{"ask": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		ss := mcp.SessionFromContext(ctx)
		for range rounds {
			if _, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "more?"}); err != nil {
				return nil, err
			}
		}
		return mcp.TextResult("done"), nil
	}}
	o := taskServerOptions(ask, &mcp.TaskOptions{Owner: ownerByName})
	var tick atomic.Int64
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o.Now = func() time.Time { return epoch.Add(time.Duration(tick.Add(1)) * time.Millisecond) }
	srv := mcp.NewServer(o)
	stalledStatusSession(t, srv, "alice/slow", nil)
	copts, statuses := statusOptions("alice/fast")
	copts.OnElicitation = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
	}
	fast := dial(t, srv, copts)
	start := time.Now()
	created, err := fast.CallToolAsTask(ctx, "ask", nil, time.Minute)
	require.NoError(t, err)

	var seen []mcp.TaskStatus
	last := time.Time{}
	for {
		got := recv(t, statuses, "the task's statuses")
		require.Equal(t, created.Task.TaskID, got.TaskID)
		at, err := time.Parse(time.RFC3339Nano, got.LastUpdatedAt)
		require.NoError(t, err)
		require.True(t, at.After(last), "status %q of %s follows one of %s", got.Status, at, last)
		last = at
		seen = append(seen, got.Status)
		if got.Status == mcp.TaskStatusCompleted {
			break
		}
		require.Contains(t, []mcp.TaskStatus{mcp.TaskStatusInputRequired, mcp.TaskStatusWorking}, got.Status)
	}
	t.Logf("%d statuses of %d changes in %v: %v", len(seen), 2*rounds+1, time.Since(start), seen)
	// A task path that waited for the stalled session would take
	// logSendTimeout (250 ms) per change: over 10 s.
	assert.Less(t, time.Since(start), 5*time.Second, "the stalled session delays the task's requests")
	select {
	case got := <-statuses:
		t.Fatalf("a status after the final one: %+v", got)
	case <-time.After(50 * time.Millisecond):
	}
}
