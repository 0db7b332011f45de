package mcp_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// Anonymous 2026-07-28 tasks belong to their peer, whatever connection it
// uses: another peer can neither read nor cancel them, and its finished
// tasks do not evict them (MaxFinishedTasks counts per peer); the peer's
// own finished tasks do.
func TestModernTasksOwnedByPeer(t *testing.T) {
	tools := &extTaskTools{}
	o := mcptest.ServerOptions(tools)
	o.StateKey = []byte("0123456789abcdef0123456789abcdef")
	o.Tasks = &mcp.TaskOptions{MaxFinishedTasks: 2}
	srv := mcp.NewServer(o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, srv.StopTasks(ctx))
	})
	connect := func(ip string) *extTaskConn {
		ct, st := transport.NewPipe(nil)
		ctx := transport.WithPeer(context.Background(), transport.PeerOfAddr(netip.MustParseAddr(ip)))
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx, st) }()
		t.Cleanup(func() { ct.Close(); <-done })
		return &extTaskConn{rawConn: &rawConn{t: t, tr: ct}, srv: srv, tools: tools}
	}
	a, b, a2 := connect("192.0.2.1"), connect("192.0.2.2"), connect("192.0.2.1")
	id := a.result("tools/call", `"name":"required"`, taskCaps)["taskId"].(string)
	a.await(id, mcp.TaskStatusCompleted)
	assert.Equal(t, id, a2.get(id)["taskId"], "the peer reads its task on another connection")

	for _, method := range []string{"tasks/get", "tasks/cancel"} {
		m := b.call(method, `"taskId":"`+id+`"`, taskCaps)
		assert.Equal(t, float64(mcp.CodeInvalidParams), m["error"].(map[string]any)["code"], "%s by another peer", method)
	}
	for range 3 {
		other := b.result("tools/call", `"name":"required"`, taskCaps)["taskId"].(string)
		b.await(other, mcp.TaskStatusCompleted)
	}
	assert.Equal(t, id, a.get(id)["taskId"], "another peer's finished tasks do not evict it")
	for range 2 {
		own := a.result("tools/call", `"name":"required"`, taskCaps)["taskId"].(string)
		a.await(own, mcp.TaskStatusCompleted)
	}
	m := a.call("tasks/get", `"taskId":"`+id+`"`, taskCaps)
	assert.NotNil(t, m["error"], "the peer's own finished tasks evict its oldest")
}
