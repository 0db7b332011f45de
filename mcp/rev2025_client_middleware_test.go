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

// TestClientMiddlewareSeesWhatTheClientSendsAndServes: on a 2025 session,
// the chain wraps each request the client sends and the server's
// elicitation/create request (the 2026-07-28 half, which both builds run:
// TestClientMiddlewareSeesWhatTheClientSendsAndServes2026).
func TestClientMiddlewareSeesWhatTheClientSendsAndServes(t *testing.T) {
	checkClientMiddlewareSeesWhatTheClientSendsAndServes(t, mcp.Version20251125)
}

func TestLegacyClientHasNoListen(t *testing.T) {
	c, _ := connect(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)), nil)
	_, err := c.Listen(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true})
	assert.ErrorIs(t, err, mcp.ErrNeedsVersion20260728)
	assert.Nil(t, c.DiscoverResult())
}
