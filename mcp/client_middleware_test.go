package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// clientLog is a ClientMiddleware that records what passes through it.
type clientLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *clientLog) middleware(name string) mcp.ClientMiddleware {
	return func(next mcp.ClientHandler) mcp.ClientHandler {
		return func(ctx context.Context, msg *mcp.ClientMessage) (any, error) {
			dir := "out"
			if msg.Incoming {
				dir = "in"
			}
			l.add(name + ">" + dir + " " + msg.Method)
			res, err := next(ctx, msg)
			if _, raw := res.(json.RawMessage); raw && !msg.Incoming {
				l.add(name + "<raw " + msg.Method)
			}
			return res, err
		}
	}
}

func (l *clientLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *clientLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// TestClientMiddlewareSeesWhatTheClientSendsAndServes2026: the chain wraps
// each request the client sends (outermost first, with the server's raw
// result on the way back) and the elicitation a 2026-07-28 server asks for
// in an input-required result.
func TestClientMiddlewareSeesWhatTheClientSendsAndServes2026(t *testing.T) {
	checkClientMiddlewareSeesWhatTheClientSendsAndServes(t, mcp.Version20260728)
}

// checkClientMiddlewareSeesWhatTheClientSendsAndServes: at revision
// version, the chain wraps each request the client sends (outermost first,
// with the server's raw result on the way back), each request the server
// makes of it (elicitation/create, as a request of a 2025 session or in a
// 2026-07-28 input-required result) and each notification it sends.
func checkClientMiddlewareSeesWhatTheClientSendsAndServes(t *testing.T, version string) {
	t.Helper()
	var log clientLog
	c, _ := connect(t, modernOptions(&modernTools{}), &mcp.ClientOptions{
		Logger:          slog.New(slog.DiscardHandler),
		ProtocolVersion: version,
		Middleware:      []mcp.ClientMiddleware{log.middleware("A"), log.middleware("B")},
		OnElicitation: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ann"}}, nil
		},
	})
	log.take() // the handshake's own messages, if any

	res, err := c.CallTool(context.Background(), "ask", nil)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Contains(t, res.Content[0].Text, "Hello, Ann!")
	assert.Equal(t, []string{
		"A>out tools/call", "B>out tools/call",
		"A>in elicitation/create", "B>in elicitation/create",
		"B<raw tools/call", "A<raw tools/call",
	}, log.take())

	require.NoError(t, c.Notify(context.Background(), "notifications/acme", map[string]any{"n": 1}))
	assert.Equal(t, []string{"A>out notifications/acme", "B>out notifications/acme"}, log.take())
}
