//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// endSession terminates the session sid on the server, as an expiry or
// another client's DELETE would.
func endSession(t *testing.T, url, sid string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, url, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// When the server answers 404 for the session, the Client starts a new
// session (initialize again) and sends the failed request once more:
// concurrent calls share one new session; OnReinitialized sees it.
func TestClientReinitializesAfterSessionEnds(t *testing.T) {
	h := streamhttp.NewServerHandler(httpServer(t, httpTools(t)), &streamhttp.Options{Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"
	var reinits atomic.Int32
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler),
		OnReinitialized: func(_ context.Context, res *mcp.InitializeResult) {
			reinits.Add(1)
			assert.Equal(t, mcp.Version20251125, res.ProtocolVersion)
		}})
	tr := streamhttp.NewClientTransport(url, &streamhttp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, tr)))
	t.Cleanup(func() { c.Close() })
	first := c.InitializeResult()
	sid := tr.SessionID()
	require.NotEmpty(t, sid)

	endSession(t, url, sid)
	const callers = 8
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			res, err := c.CallTool(ctx, "whoami", nil)
			if assert.NoError(t, err) {
				assert.Equal(t, `{"text":"anonymous"}`, res.Content[0].Text)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), reinits.Load(), "one new session for all the callers")
	assert.NotEqual(t, sid, tr.SessionID())
	assert.NotEmpty(t, tr.SessionID())
	assert.NotSame(t, first, c.InitializeResult())
	assert.Equal(t, 1, h.SessionCount())

	// Notifications are sent again too.
	endSession(t, url, tr.SessionID())
	require.NoError(t, c.Notify(ctx, "notifications/roots/list_changed", nil))
	assert.Equal(t, int32(2), reinits.Load())
	require.NoError(t, c.Ping(ctx))
}

// With DisableReinitialize the caller gets the error, matchable as
// transport.ErrSessionNotFound, and no new session is started.
func TestClientDisableReinitialize(t *testing.T) {
	h := streamhttp.NewServerHandler(httpServer(t, httpTools(t)), &streamhttp.Options{Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"
	c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler), DisableReinitialize: true})
	tr := streamhttp.NewClientTransport(url, &streamhttp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	require.NoError(t, c.Connect(ctx, tr))
	t.Cleanup(func() { c.Close() })
	endSession(t, url, tr.SessionID())

	_, err := c.CallTool(ctx, "whoami", nil)
	require.ErrorIs(t, err, transport.ErrSessionNotFound)
	var se *streamhttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.StatusCode)
	assert.Empty(t, tr.SessionID(), "the transport forgot the ended session")
	assert.Equal(t, 0, h.SessionCount())
}
