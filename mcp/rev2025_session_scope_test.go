//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// A Session is the connection: SessionFromContext and Request.Session are
// the same pointer for every request of a connection, whatever the
// requests' revision, so a map keyed by *Session holds one entry per
// connection. The Session's ProtocolVersion tells the kinds of connection
// apart (Sessions), while the request answers for itself.
func TestSessionIsTheConnection(t *testing.T) {
	var mu sync.Mutex
	seen := map[*mcp.Session]int{}
	o := mcptest.ServerOptions(nil)
	o.Methods = map[string]mcp.MethodHandler{"x/who": func(ctx context.Context, req *mcp.Request) (any, error) {
		ss := mcp.SessionFromContext(ctx)
		if ss != req.Session {
			return nil, errors.New("SessionFromContext is not the request's Session")
		}
		mu.Lock()
		seen[ss]++
		mu.Unlock()
		return map[string]any{"request": req.ProtocolVersion(), "session": ss.ProtocolVersion(),
			"elicitation": req.ClientCapabilities().Elicitation != nil, "client": req.ClientInfo().Name}, nil
	}}
	srv := mcp.NewServer(o)
	const perConn, conns = 100, 2
	cases := []struct {
		name                     string
		init                     bool
		meta                     string
		wantRequest, wantSession string
		wantElicitation          bool
		wantClient               string
	}{
		{"2025 session", true, `"_meta":{}`, mcp.Version20251125, mcp.Version20251125, false, "c"},
		{"2026-07-28 connection", false, modernMeta, mcp.Version20260728, mcp.Version20260728, true, ""},
		{"2025 session carrying 2026-07-28 requests", true, modernMeta, mcp.Version20260728, mcp.Version20251125, true, ""},
	}
	// the connections stay open to the end (no subtests): Sessions lists
	// them all
	for _, tc := range cases {
		for range conns {
			c := connectRaw(t, srv, tc.init, false)
			for i := range perConn {
				c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x/who","params":{%s}}`, i, tc.meta))
				m := c.recv()
				require.Contains(t, m, "result", "%s: %v", tc.name, m)
				res := m["result"].(map[string]any)
				assert.Equal(t, tc.wantRequest, res["request"], tc.name)
				assert.Equal(t, tc.wantSession, res["session"], tc.name)
				assert.Equal(t, tc.wantElicitation, res["elicitation"], tc.name)
				assert.Equal(t, tc.wantClient, res["client"], tc.name)
			}
		}
	}
	connectRaw(t, srv, false, false) // never initialized, never handed a request

	mu.Lock()
	assert.Len(t, seen, len(cases)*conns, "one entry per connection")
	for ss, n := range seen {
		assert.Equal(t, perConn, n, "every request of a connection saw its one Session %p", ss)
	}
	mu.Unlock()
	require.Eventually(t, func() bool { return len(srv.Sessions()) == len(cases)*conns+1 }, 5*time.Second, 10*time.Millisecond)
	kinds := map[string]int{}
	for _, ss := range srv.Sessions() {
		kinds[ss.ProtocolVersion()]++
		if ss.ProtocolVersion() == mcp.Version20260728 {
			// outside any request too: the connection's client takes no
			// server-to-client requests
			_, err := ss.CreateMessage(context.Background(), &mcp.CreateMessageParams{MaxTokens: 1})
			assert.ErrorIs(t, err, mcp.ErrNoClientRequests)
		}
	}
	assert.Equal(t, map[string]int{mcp.Version20251125: 2 * conns, mcp.Version20260728: conns, "": 1}, kinds,
		"a 2026-07-28 connection does not look like an uninitialized one")
}

// A notification is served under the rules of its revision, as a request
// is: one carrying the 2026-07-28 _meta in that _meta's scope, at any time
// (the revision has no handshake), one of a 2025 session in the session's
// scope once it is initialized; a 2026-07-28 notification whose _meta is
// not valid is ignored.
func TestNotificationFollowsItsRevision(t *testing.T) {
	type scope struct {
		version, level string
		elicitation    bool
	}
	got := make(chan scope, 4)
	o := mcptest.ServerOptions(nil)
	o.Notifications = map[string]mcp.MethodHandler{"x/note": func(_ context.Context, req *mcp.Request) (any, error) {
		got <- scope{req.ProtocolVersion(), string(req.LogLevel()), req.ClientCapabilities().Elicitation != nil}
		return nil, nil
	}}
	srv := mcp.NewServer(o)
	const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/logLevel":"debug"}`
	cases := []struct {
		name   string
		init   bool
		params string
		want   *scope // nil: not served
	}{
		{"2025 session", true, `{}`, &scope{mcp.Version20251125, "info", false}},
		{"2026-07-28 on a 2025 session", true, `{` + meta2026 + `}`, &scope{mcp.Version20260728, "debug", true}},
		{"2026-07-28 before any initialize", false, `{` + meta2026 + `}`, &scope{mcp.Version20260728, "debug", true}},
		{"2025 before initialize waits for it", false, `{}`, nil},
		{"2026-07-28 without clientCapabilities (a notification's _meta needs none)", false, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, &scope{mcp.Version20260728, "", false}},
		{"2026-07-28 with an invalid _meta", false, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"loud"}}`, nil},
		{"2026-07-28 of an unknown revision", true, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := connectRaw(t, srv, tc.init, false)
			c.send(`{"jsonrpc":"2.0","method":"x/note","params":` + tc.params + `}`)
			// notifications are served in order on the reading goroutine:
			// once a later request is answered, the notification was seen
			c.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
			require.Equal(t, "p", c.recv()["id"])
			if tc.want == nil {
				assert.Empty(t, got, "not served")
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, *tc.want, <-got)
		})
	}
}
