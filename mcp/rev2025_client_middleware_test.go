//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// TestClientMiddlewareAnswersInPlace: a middleware that returns without
// calling next answers for the server, with a value of its own, which the
// Client decodes into the typed result; its error is the call's.
func TestClientMiddlewareAnswersInPlace(t *testing.T) {
	errRefused := errors.New("refused by policy")
	c, _ := connect(t, modernOptions(&modernTools{}), &mcp.ClientOptions{
		Logger: slog.New(slog.DiscardHandler),
		Middleware: []mcp.ClientMiddleware{func(next mcp.ClientHandler) mcp.ClientHandler {
			return func(ctx context.Context, msg *mcp.ClientMessage) (any, error) {
				switch msg.Method {
				case "tools/list":
					return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "cached"}}}, nil
				case "tools/call":
					return nil, errRefused
				}
				return next(ctx, msg)
			}
		}},
	})
	list, err := c.ListTools(context.Background(), "")
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)
	assert.Equal(t, "cached", list.Tools[0].Name)

	_, err = c.CallTool(context.Background(), "hello", nil)
	assert.ErrorIs(t, err, errRefused)

	require.NoError(t, c.Ping(context.Background()), "other methods reach the server")
}

// TestClientMiddlewareSeesWhatTheClientSendsAndServes: in both revisions,
// the chain wraps each request the client sends (outermost first, with
// the server's raw result on the way back) and each request the server
// makes of it: a 2025 session's elicitation/create request, and the
// elicitation a 2026-07-28 server asks for in an input-required result.
func TestClientMiddlewareSeesWhatTheClientSendsAndServes(t *testing.T) {
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(version, func(t *testing.T) {
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
		})
	}
}

func TestLegacyClientHasNoListen(t *testing.T) {
	c, _ := connect(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)), nil)
	_, err := c.Listen(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true})
	assert.ErrorIs(t, err, mcp.ErrNeedsVersion20260728)
	assert.Nil(t, c.DiscoverResult())
}
