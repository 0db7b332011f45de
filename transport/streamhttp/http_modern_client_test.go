package streamhttp_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// subscriptions/listen over HTTP: the acknowledgement and a tagged
// list_changed arrive on the request's SSE stream; Close ends the
// subscription by closing that stream.
func TestModernListenOverHTTP(t *testing.T) {
	reg := registry.New(nil)
	registry.MustRegister(reg, "one", "First tool", func(context.Context, struct{}) (string, error) { return "1", nil }, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Logger: slog.New(slog.DiscardHandler)})
	h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Stateless: true})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Close()
	ctx := context.Background()

	changed := make(chan string, 4)
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Logger: slog.New(slog.DiscardHandler),
		OnListChanged: func(method string) { changed <- method }})
	require.NoError(t, c.Connect(ctx, streamhttp.NewClientTransport(ts.URL, nil)))
	defer c.Close()

	sub, err := c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true})
	require.NoError(t, err)
	assert.Equal(t, mcp.SubscriptionFilter{ToolsListChanged: true}, sub.Honoured(), "no prompts: not honoured")
	registry.MustRegister(reg, "two", "Second tool", func(context.Context, struct{}) (string, error) { return "2", nil }, nil)
	select {
	case m := <-changed:
		assert.Equal(t, "notifications/tools/list_changed", m)
	case <-time.After(5 * time.Second):
		t.Fatal("no list_changed on the subscription")
	}
	closed := make(chan struct{})
	go func() { _ = sub.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the subscription")
	}
}

// A tool whose input schema annotates an argument with x-mcp-header: the
// client transport learns the annotation from tools/list and mirrors the
// argument into Mcp-Param-{Name}, which the server checks against the body
// (plain, base64-wrapped and numeric values).
func TestModernClientSendsParamHeaders(t *testing.T) {
	type In struct {
		Region   string `json:"region" jsonschema_extras:"x-mcp-header=Region"`
		Priority int    `json:"priority" jsonschema_extras:"x-mcp-header=Priority"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "route", "Routes by region", func(_ context.Context, in In) (string, error) {
		return in.Region, nil
	}, nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Logger: slog.New(slog.DiscardHandler)})
	h := streamhttp.NewServerHandler(srv, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Close()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, c.Connect(ctx, streamhttp.NewClientTransport(ts.URL, nil)))
	defer c.Close()

	// Before tools/list the transport does not know the annotation: the
	// server refuses the call for the missing header.
	_, err := c.CallTool(ctx, "route", map[string]any{"region": "eu-west", "priority": 3})
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(mcp.CodeHeaderMismatch), e.Code)

	_, err = c.ListTools(ctx, "")
	require.NoError(t, err)
	for _, region := range []string{"eu-west", "  padded ", "zürich", "=?base64?literal?="} {
		res, err := c.CallTool(ctx, "route", map[string]any{"region": region, "priority": 3})
		require.NoError(t, err, region)
		assert.Equal(t, region, res.Content[0].Text)
	}
}
