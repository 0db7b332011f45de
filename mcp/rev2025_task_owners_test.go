//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// ownerByName is a TaskOptions.Owner for tests: the part of the client's
// name before "/" (a stand-in for a token's subject), "" for a name
// without one (the tasks are then bound to the session).
func ownerByName(ctx context.Context) string {
	owner, _, ok := strings.Cut(mcp.RequestFromContext(ctx).ClientInfo().Name, "/")
	if !ok {
		return ""
	}
	return owner
}

// statusClient is a Client named name whose status notifications arrive
// on its channel.
type statusClient struct {
	*mcp.Client
	statuses chan mcp.Task
}

func statusOptions(name string) (*mcp.ClientOptions, chan mcp.Task) {
	ch := make(chan mcp.Task, 64)
	copts := *quietClient
	copts.Name = name
	copts.OnTaskStatus = func(p *mcp.TaskStatusNotificationParams) { ch <- p.Task }
	return &copts, ch
}

func dialStatus(t *testing.T, srv *mcp.Server, name string) *statusClient {
	copts, ch := statusOptions(name)
	return &statusClient{Client: dial(t, srv, copts), statuses: ch}
}

// waitStatus returns the first status of task id c receives with status
// want (earlier ones are skipped); every status c gets is of task id.
func (c *statusClient) waitStatus(t *testing.T, id string, want mcp.TaskStatus) mcp.Task {
	t.Helper()
	for {
		got := recv(t, c.statuses, "the status of task "+id)
		require.Equal(t, id, got.TaskID, "a status of another task")
		if got.Status == want {
			return got
		}
	}
}

// releaseTools is a task tool "wait" that returns when its release
// channel (by message) is closed.
func releaseTools(release map[string]chan struct{}) taskTools {
	return taskTools{"wait": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		var p struct{ Key string }
		_ = json.Unmarshal(call.Arguments, &p)
		select {
		case <-release[p.Key]:
			return mcp.TextResult("done " + p.Key), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// The status of a 2025-11-25 task goes to every live session of its
// owner, and to no session of another owner; a task bound to its session
// (no owner) notifies that session only. Once every session has ended,
// nothing is held for them.
func TestTaskStatusGoesToTheOwnersSessions(t *testing.T) {
	ctx := context.Background()
	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "s": make(chan struct{})}
	srv := mcp.NewServer(taskServerOptions(releaseTools(release), &mcp.TaskOptions{Owner: ownerByName}))
	a1, a2 := dialStatus(t, srv, "alice/1"), dialStatus(t, srv, "alice/2")
	b := dialStatus(t, srv, "bob/1")
	s1, s2 := dialStatus(t, srv, "anonymous"), dialStatus(t, srv, "anonymous")
	for _, c := range []*statusClient{a2, b, s2} { // each asks for its owner's tasks
		all, err := c.ListAllTasks(ctx)
		require.NoError(t, err)
		assert.Empty(t, all)
	}
	start := func(c *statusClient, key string) string {
		t.Helper()
		created, err := c.CallToolAsTask(ctx, "wait", map[string]string{"key": key}, time.Minute)
		require.NoError(t, err)
		return created.Task.TaskID
	}
	ta, tb, ts := start(a1, "a"), start(b, "b"), start(s1, "s")
	for _, key := range []string{"a", "b", "s"} {
		close(release[key])
	}
	for _, c := range []*statusClient{a1, a2} {
		assert.Equal(t, mcp.TaskStatusCompleted, c.waitStatus(t, ta, mcp.TaskStatusCompleted).Status, "alice's sessions")
	}
	b.waitStatus(t, tb, mcp.TaskStatusCompleted) // bob gets his own task's only (waitStatus checks)
	s1.waitStatus(t, ts, mcp.TaskStatusCompleted)

	require.Len(t, srv.Sessions(), 5)
	assert.Empty(t, s2.statuses, "a session-bound task notifies its session only")
	assert.Empty(t, b.statuses)

	for _, c := range []*statusClient{a1, a2, b, s1, s2} {
		require.NoError(t, c.Close())
	}
	require.Eventually(t, func() bool {
		sessions, owners := mcp.TaskOwnerCountsForTest(srv)
		return sessions == 0 && owners == 0
	}, 5*time.Second, time.Millisecond, "nothing held once the sessions ended")
}

// A task of an owner outlives the session that created it: the owner's
// other session, one that read the task, gets its final status.
func TestTaskStatusReachesTheOwnerAfterItsSessionEnds(t *testing.T) {
	ctx := context.Background()
	release := map[string]chan struct{}{"a": make(chan struct{})}
	srv := mcp.NewServer(taskServerOptions(releaseTools(release), &mcp.TaskOptions{Owner: ownerByName}))
	a1, a2 := dialStatus(t, srv, "alice/1"), dialStatus(t, srv, "alice/2")
	created, err := a1.CallToolAsTask(ctx, "wait", map[string]string{"key": "a"}, time.Minute)
	require.NoError(t, err)
	id := created.Task.TaskID
	got, err := a2.GetTask(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusWorking, got.Status)
	require.NoError(t, a1.Close())
	require.Eventually(t, func() bool {
		sessions, owners := mcp.TaskOwnerCountsForTest(srv)
		return sessions == 1 && owners == 1
	}, 5*time.Second, time.Millisecond, "the creating session left")

	close(release["a"])
	assert.Equal(t, mcp.TaskStatusCompleted, a2.waitStatus(t, id, mcp.TaskStatusCompleted).Status)
	res, err := a2.TaskResult(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "done a", textOf(t, res))
}

// A session is registered under its own key and at most 8 other owners:
// an Owner function that answers differently for each request of one
// session cannot make the server hold more for it.
func TestTaskOwnersOfOneSessionAreBounded(t *testing.T) {
	ctx := context.Background()
	var n atomic.Int64
	srv := mcp.NewServer(taskServerOptions(releaseTools(nil), &mcp.TaskOptions{
		Owner: func(context.Context) string {
			if i := n.Add(1); i > 1 { // the first request has no owner: the session's own key
				return "owner-" + strconv.FormatInt(i, 10)
			}
			return ""
		}}))
	c := dial(t, srv, nil)
	for range 20 {
		_, err := c.ListTasks(ctx, "")
		require.NoError(t, err)
	}
	sessions, owners := mcp.TaskOwnerCountsForTest(srv)
	assert.Equal(t, 1, sessions)
	assert.Equal(t, 1+8, owners, "its own key and maxOwnersPerSession others")
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool {
		sessions, owners := mcp.TaskOwnerCountsForTest(srv)
		return sessions == 0 && owners == 0
	}, 5*time.Second, time.Millisecond)
}

// A session that does not read delays no other session of the owner:
// the others get the status while its write is still blocked. Two such
// sessions, one joining the owner before the reading one and one after,
// so that a sender that served the sessions one after another would meet
// one of them first in either order.
func TestSlowSessionDelaysNoOtherStatus(t *testing.T) {
	ctx := context.Background()
	release := map[string]chan struct{}{"a": make(chan struct{})}
	srv := mcp.NewServer(taskServerOptions(releaseTools(release), &mcp.TaskOptions{Owner: ownerByName}))
	unstall := make(chan struct{})
	slowSession := func(name string) *stallingTransport {
		slow, _ := stalledStatusSession(t, srv, name, unstall)
		return slow
	}
	before := slowSession("alice/slow-1")
	fast := dialStatus(t, srv, "alice/fast")
	created, err := fast.CallToolAsTask(ctx, "wait", map[string]string{"key": "a"}, time.Minute)
	require.NoError(t, err)
	after := slowSession("alice/slow-2")

	close(release["a"])
	fast.waitStatus(t, created.Task.TaskID, mcp.TaskStatusCompleted)
	for _, slow := range []*stallingTransport{before, after} {
		require.Eventually(t, slow.entered.Load, 5*time.Second, time.Millisecond, "the slow sessions are sent the status too")
	}
	close(unstall)
	for _, slow := range []*stallingTransport{before, after} {
		assert.False(t, slow.timedOut.Load(), "the fast session got the status while the slow ones' writes were blocked")
	}
}
