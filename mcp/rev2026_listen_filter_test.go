package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Every broadcast (Server.NotifyAll, the list changes and resource updates
// the sources report) and ListenStream.Notify reach exactly the 2026-07-28
// listen streams whose filter covers them: a stream subscribed to nothing
// gets nothing, one subscribed to X gets X and nothing else.
func TestBroadcastsHonourEachListenFilter(t *testing.T) {
	reg := registry.New(nil)
	opts := mcptest.ServerOptions(reg)
	opts.Resources, opts.Prompts = reg, reg
	srv := mcp.NewServer(opts)
	streams := map[string]*rawConn{}
	for id, filter := range map[string]string{
		"none":      `{}`,
		"tools":     `{"toolsListChanged":true}`,
		"prompts":   `{"promptsListChanged":true}`,
		"resources": `{"resourcesListChanged":true}`,
		"x":         `{"resourceSubscriptions":["test://x/"]}`,
	} {
		c := connectRaw(t, srv, false, true)
		c.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{"notifications":` + filter + `,` + modernMeta + `}}`)
		require.Equal(t, "notifications/subscriptions/acknowledged", c.recv()["method"])
		streams[id] = c
	}
	require.Eventually(t, func() bool { return len(srv.ListenStreams()) == len(streams) }, 5*time.Second, time.Millisecond)
	stream := func(id string) *mcp.ListenStream {
		for _, ls := range srv.ListenStreams() {
			if string(ls.ID()) == `"`+id+`"` {
				return ls
			}
		}
		t.Fatalf("no listen stream %q", id)
		return nil
	}
	ctx := context.Background()
	noTool := func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) { return nil, nil }
	noPrompt := func(context.Context, map[string]string) (*mcp.GetPromptResult, error) { return nil, nil }

	cases := []struct {
		name      string
		broadcast func() error
		method    string
		uri       string   // the params.uri the receivers get ("": none)
		to        []string // the streams that get it; every other gets nothing
	}{
		{"NotifyAll of a method no filter names", func() error { return srv.NotifyAll(ctx, "acme/news", map[string]any{"headline": "x"}) },
			"acme/news", "", nil},
		{"NotifyAll of tools list_changed", func() error { return srv.NotifyAll(ctx, "notifications/tools/list_changed", nil) },
			"notifications/tools/list_changed", "", []string{"tools"}},
		{"a tool added", func() error {
			return reg.AddTool(&mcp.Tool{Name: "t1", InputSchema: json.RawMessage(`{"type":"object"}`)}, noTool, nil)
		}, "notifications/tools/list_changed", "", []string{"tools"}},
		{"a prompt added", func() error { return reg.AddPrompt(&mcp.Prompt{Name: "p1"}, noPrompt, nil) },
			"notifications/prompts/list_changed", "", []string{"prompts"}},
		{"a resource added", func() error { return reg.AddTextResource(&mcp.Resource{URI: "test://y/new", Name: "new"}, "new") },
			"notifications/resources/list_changed", "", []string{"resources"}},
		{"a subscribed resource updated", func() error { reg.NotifyResourceUpdated("test://x/1"); return nil },
			"notifications/resources/updated", "test://x/1", []string{"x"}},
		{"another resource updated", func() error { reg.NotifyResourceUpdated("test://y/1"); return nil },
			"notifications/resources/updated", "test://y/1", nil},
		{"NotifyAll of a subscribed resource's update", func() error {
			return srv.NotifyAll(ctx, "notifications/resources/updated", map[string]any{"uri": "test://x/2"})
		}, "notifications/resources/updated", "test://x/2", []string{"x"}},
		{"one stream notified alone", func() error {
			return stream("x").Notify("notifications/resources/updated", map[string]any{"uri": "test://x/3"})
		},
			"notifications/resources/updated", "test://x/3", []string{"x"}},
		{"one stream alone, of a list it opted in to", func() error { return stream("prompts").Notify("notifications/prompts/list_changed", nil) },
			"notifications/prompts/list_changed", "", []string{"prompts"}},
	}
	for _, tc := range cases {
		require.NoError(t, tc.broadcast(), tc.name)
		// A stream's notifications come in order: a broadcast it must not
		// get would arrive before the next one it gets, and fail there.
		for _, id := range tc.to {
			m := streams[id].recv()
			require.Equal(t, tc.method, m["method"], "%s: stream %s got %v", tc.name, id, m)
			params := m["params"].(map[string]any)
			assert.Equal(t, id, params["_meta"].(map[string]any)[revision.MetaSubscriptionID], tc.name)
			if tc.uri != "" {
				assert.Equal(t, tc.uri, params["uri"], tc.name)
			}
		}
	}
	// Nothing else was sent: each stream's next message ends it.
	for id, c := range streams {
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `"}}`)
		m := c.recv()
		assert.Equal(t, id, m["id"], "stream %s got nothing more, but %v", id, m)
	}
	require.Eventually(t, func() bool { return len(srv.ListenStreams()) == 0 }, 5*time.Second, time.Millisecond)
}

// Outside a request, only an initialized 2025 session has a channel to
// its client: on any other connection (one serving 2026-07-28 requests
// without initialize, whose listen stream subscribed to nothing, or one not
// initialized yet) Session.Notify fails with ErrNoChannel and Session.Log
// sends nothing, so neither slips past a listen stream's filter. The same
// holds with and without the 2025 rules compiled in.
func TestSessionNotifyAndLogNeedAnInitialized2025Session(t *testing.T) {
	cases := []struct {
		name    string
		version string // the connection's ProtocolVersion
		open    func(c *rawConn)
		end     func(c *rawConn) // sends a request; the next message answers it
		endID   string
	}{
		{"a 2026-07-28 connection whose listen stream subscribed to nothing", mcp.Version20260728,
			func(c *rawConn) {
				c.send(`{"jsonrpc":"2.0","id":"none","method":"subscriptions/listen","params":{"notifications":{},` + modernMeta + `}}`)
				require.Equal(t, "notifications/subscriptions/acknowledged", c.recv()["method"])
			},
			func(c *rawConn) {
				c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"none"}}`)
			}, "none"},
		{"a connection not initialized", "",
			func(*rawConn) {},
			func(c *rawConn) { c.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`) }, "p"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := registry.New(nil)
			opts := mcptest.ServerOptions(reg)
			opts.Logging, opts.LogLevel = true, mcp.LoggingLevelDebug
			srv := mcp.NewServer(opts)
			c := connectRaw(t, srv, false, true)
			tc.open(c)
			var ss *mcp.Session
			require.Eventually(t, func() bool {
				all := srv.Sessions()
				if len(all) != 1 || all[0].ProtocolVersion() != tc.version {
					return false
				}
				ss = all[0]
				return true
			}, 5*time.Second, time.Millisecond)
			ctx := context.Background()
			require.ErrorIs(t, ss.Notify(ctx, "notifications/tools/list_changed", nil), mcp.ErrNoChannel)
			require.ErrorIs(t, ss.Notify(ctx, "acme/news", map[string]any{"headline": "x"}), mcp.ErrNoChannel)
			require.NoError(t, ss.Log(ctx, mcp.LoggingLevelEmergency, "l", "sent to no one"))
			require.NoError(t, srv.NotifyAll(ctx, "notifications/tools/list_changed", nil))
			// Nothing was sent: the next message answers the request that ends.
			tc.end(c)
			m := c.recv()
			assert.Equal(t, tc.endID, m["id"], "the client got %v", m)
		})
	}
}

// ListenStream.Filter hands out a copy: a caller that writes to its
// slices, while broadcasts read the live filter, changes nothing of the
// subscription (run under -race).
func TestListenStreamFilterIsACopy(t *testing.T) {
	opts := modernOptions(&modernTools{})
	opts.Resources = mcptest.NewCatalog()
	srv := mcp.NewServer(opts)
	c := connectRaw(t, srv, false, true)
	c.send(`{"jsonrpc":"2.0","id":"res","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://users/","test://docs/"]},` + modernMeta + `}}`)
	require.Equal(t, "notifications/subscriptions/acknowledged", c.recv()["method"])
	require.Eventually(t, func() bool { return len(srv.ListenStreams()) == 1 }, 5*time.Second, time.Millisecond)
	ls := srv.ListenStreams()[0]
	want := []string{"test://users/", "test://docs/"}
	require.Equal(t, want, ls.Filter().ResourceSubscriptions)

	const n = 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			assert.NoError(t, srv.NotifyAll(context.Background(), "notifications/resources/updated", map[string]any{"uri": "test://users/ada"}))
		}
	}()
	for range n {
		f := ls.Filter()
		f.ResourceSubscriptions[0] = "test://evil/"
		f.ResourceSubscriptions = append(f.ResourceSubscriptions[:1], "test://more/")
		f.TaskIDs = append(f.TaskIDs, "t1")
	}
	<-done
	assert.Equal(t, want, ls.Filter().ResourceSubscriptions, "the subscription's filter is unchanged")
	assert.Empty(t, ls.Filter().TaskIDs)
	for range n {
		m := c.recv()
		assert.Equal(t, "test://users/ada", m["params"].(map[string]any)["uri"], "the live filter still covers its URIs")
	}
	require.NoError(t, srv.NotifyAll(context.Background(), "notifications/resources/updated", map[string]any{"uri": "test://evil/1"}))
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"res"}}`)
	assert.Equal(t, "res", c.recv()["id"], "a URI written into a copy is not covered: the next message is the end of the subscription")
}
