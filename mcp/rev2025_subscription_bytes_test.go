//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// What resources/subscribe makes a session hold is bounded in bytes: each
// URI by MaxURIBytes, all of them by MaxSubscriptionBytes; an error names
// the limit without echoing the URI, and an unsubscribe frees its bytes.
func TestSubscriptionBytesBounded(t *testing.T) {
	reg := registry.New(nil)
	o := mcptest.ServerOptions(reg)
	o.Resources = reg
	o.MaxURIBytes, o.MaxSubscriptionBytes = 1024, 4*(1000+64)
	c := startRaw(t, o)
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.recv()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	subscribe := func(id int, method, uri string) map[string]any {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/%s","params":{"uri":%q}}`, id, method, uri))
		return c.recv()
	}
	uri := func(i, n int) string {
		s := fmt.Sprintf("test://r/%d/", i)
		return s + strings.Repeat("x", n-len(s))
	}

	code, msg, limit := limitOf(t, subscribe(1, "subscribe", uri(0, 1025)))
	assert.Equal(t, float64(mcp.CodeInvalidParams), code)
	assert.Equal(t, "MaxURIBytes", limit)
	assert.Less(t, len(msg), 200, "the URI is not echoed")

	for i := range 4 {
		assert.NotNil(t, subscribe(10+i, "subscribe", uri(i, 1000))["result"])
	}
	assert.NotNil(t, subscribe(20, "subscribe", uri(0, 1000))["result"], "an existing subscription costs nothing more")
	code, msg, limit = limitOf(t, subscribe(21, "subscribe", uri(9, 20)))
	assert.Equal(t, float64(mcp.CodeServerBusy), code)
	assert.Equal(t, "MaxSubscriptionBytes", limit)
	assert.Contains(t, msg, "MaxSubscriptionBytes")

	assert.NotNil(t, subscribe(22, "unsubscribe", uri(1, 1000))["result"])
	assert.NotNil(t, subscribe(23, "subscribe", uri(9, 20))["result"], "an unsubscribe frees its bytes")
}

// What one peer's subscriptions hold is bounded over all its sessions
// (MaxPeerSubscriptionBytes), and what every peer's hold together
// (MaxTotalSubscriptionBytes): a peer that opens more sessions gets no
// more, another peer is still served until the server's budget is full,
// and a session's end frees its bytes.
func TestSubscriptionBytesPerPeer(t *testing.T) {
	reg := registry.New(nil)
	o := mcptest.ServerOptions(reg)
	o.Resources = reg
	entry := 1000 + 64
	o.MaxURIBytes, o.MaxSubscriptionBytes = 1024, 4*entry
	o.MaxPeerSubscriptionBytes, o.MaxTotalSubscriptionBytes = 6*entry, 9*entry
	srv := mcp.NewServer(o)
	connect := func(addr string) (*rawConn, func()) {
		ct, st := transport.NewPipe(nil)
		ctx, cancel := context.WithCancel(transport.WithPeer(context.Background(), transport.PeerOfAddr(netip.MustParseAddr(addr))))
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Run(ctx, st) }()
		c := &rawConn{t: t, tr: ct}
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		c.recv()
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		end := func() { cancel(); ct.Close(); <-done }
		t.Cleanup(end)
		return c, end
	}
	n := 0
	subscribe := func(c *rawConn) map[string]any {
		n++
		s := fmt.Sprintf("test://r/%d/", n)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, n, s+strings.Repeat("x", 1000-len(s))))
		return c.recv()
	}
	greedy1, _ := connect("127.0.0.2")
	greedy2, end2 := connect("127.0.0.2")
	for range 4 {
		require.NotNil(t, subscribe(greedy1)["result"])
	}
	for range 2 {
		require.NotNil(t, subscribe(greedy2)["result"], "a second session of the peer gets the rest of its share")
	}
	code, _, limit := limitOf(t, subscribe(greedy2))
	assert.Equal(t, float64(mcp.CodeServerBusy), code)
	assert.Equal(t, "MaxPeerSubscriptionBytes", limit, "a third session would not enlarge it either")
	greedy3, _ := connect("127.0.0.2")
	_, _, limit = limitOf(t, subscribe(greedy3))
	assert.Equal(t, "MaxPeerSubscriptionBytes", limit)

	polite, _ := connect("127.0.0.3")
	for range 3 {
		require.NotNil(t, subscribe(polite)["result"], "another peer is served")
	}
	_, _, limit = limitOf(t, subscribe(polite))
	assert.Equal(t, "MaxTotalSubscriptionBytes", limit)

	end2() // the session's end frees its two subscriptions
	require.Eventually(t, func() bool { return subscribe(greedy3)["result"] != nil }, 5*time.Second, 20*time.Millisecond)
}
