package middleware

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// End to end: a greedy session that fills its share of the default slots
// gets RESOURCE_EXHAUSTED at once; a polite session beside it is served.
func TestServerGreedySessionBesidePolite(t *testing.T) {
	reg := registry.New(nil)
	started := make(chan struct{}, 20)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "hog", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-release
			return mcp.TextResult("done"), nil
		}, nil))
	registry.MustRegister(reg, "echo", "Echoes.", func(_ context.Context, in echoIn) (string, error) { return in.Message, nil }, nil)
	lim := NewLimiter(DefaultMaxConcurrent)
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
		Tools: Standard(reg, &StandardOptions{Limiter: lim})})
	ctx := context.Background()
	connect := func() *mcp.Client {
		ct, st := transport.NewPipe(nil)
		go func() { _ = srv.Run(ctx, st) }()
		c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: testProtocolVersion, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, c.Connect(ctx, ct))
		t.Cleanup(func() { c.Close() })
		return c
	}
	greedy, polite := connect(), connect()

	share := DefaultPerClientShare(DefaultMaxConcurrent)
	var wg sync.WaitGroup
	for range share {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := greedy.CallTool(ctx, "hog", nil)
			assert.NoError(t, err)
		}()
		<-started
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := greedy.CallTool(cctx, "hog", nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrResourceExhausted, se.Code)
	assert.Equal(t, "maxConcurrentPerClient", se.Details["limit"])
	assert.Less(t, time.Since(start), 5*time.Second, "refused at once, not queued")

	res, err := polite.CallTool(ctx, "echo", map[string]any{"message": "served"})
	require.NoError(t, err)
	assert.Equal(t, "served", res.Content[0].Text)
	once.Do(func() { close(release) })
	wg.Wait()
}

// DefaultClientKey is the peer's key: the token's subject or client id,
// else the address the transport saw, else the connection; a
// self-reported client name never changes it.
func TestDefaultClientKey(t *testing.T) {
	ctx := context.Background()
	tok := transport.WithTokenInfo(ctx, &transport.TokenInfo{Subject: "ada"})
	assert.Equal(t, "subject:ada", DefaultClientKey(tok, &mcp.ToolCall{}), "a token wins, even without a session")
	assert.Equal(t, "client:app", DefaultClientKey(transport.WithTokenInfo(ctx, &transport.TokenInfo{ClientID: "app"}), nil),
		"a token without subject names its client")
	assert.Equal(t, "", DefaultClientKey(ctx, &mcp.ToolCall{}), "outside a Server")
	assert.Equal(t, "", DefaultClientKey(ctx, nil))
	assert.Equal(t, "", DefaultClientKey(transport.WithTokenInfo(ctx, &transport.TokenInfo{}), nil), "an empty token is no identity")

	// Through a Server: the tool answers with its own client key.
	reg := registry.New(nil)
	registry.MustRegister(reg, "whoami", "Reports the client key.", func(ctx context.Context, _ struct{}) (string, error) {
		return DefaultClientKey(ctx, mcp.ToolCallFromContext(ctx)), nil
	}, nil)
	serve := func(t *testing.T, srvCtx context.Context, copts *mcp.ClientOptions) (string, *mcp.Client) {
		ct, st := transport.NewPipe(nil)
		srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tools: Standard(reg, nil)})
		go func() { _ = srv.Run(srvCtx, st) }()
		copts.Logger = slog.New(slog.DiscardHandler)
		if copts.ProtocolVersion == "" {
			copts.ProtocolVersion = testProtocolVersion
		}
		c := mcp.NewClient(copts)
		require.NoError(t, c.Connect(ctx, ct))
		t.Cleanup(func() { c.Close() })
		res, err := c.CallTool(ctx, "whoami", nil)
		require.NoError(t, err)
		return res.Content[0].Text, c
	}
	t.Run("connection", func(t *testing.T) {
		k1, _ := serve(t, ctx, &mcp.ClientOptions{})
		k2, _ := serve(t, ctx, &mcp.ClientOptions{})
		assert.True(t, strings.HasPrefix(k1, "conn:"), k1)
		assert.NotEqual(t, k1, k2, "each connection without an address is its own peer")
	})
	t.Run("session with a token", func(t *testing.T) {
		k, _ := serve(t, tok, &mcp.ClientOptions{})
		assert.Equal(t, "subject:ada", k)
	})
	addr := transport.WithPeer(ctx, transport.PeerOfAddr(netip.MustParseAddr("192.0.2.7")))
	t.Run("sessions from one address", func(t *testing.T) {
		k1, _ := serve(t, addr, &mcp.ClientOptions{Name: "one"})
		k2, _ := serve(t, addr, &mcp.ClientOptions{Name: "two"})
		assert.Equal(t, "addr:192.0.2.7", k1)
		assert.Equal(t, k1, k2, "sessions and names of one address share its key")
	})
	modern := transport.WithStatelessRequest(addr, transport.StatelessRequest{ProtocolVersion: mcp.Version20260728})
	t.Run("anonymous 2026-07-28 requests", func(t *testing.T) {
		k1, _ := serve(t, modern, &mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Name: "inspector"})
		k2, _ := serve(t, modern, &mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Name: strings.Repeat("x", 500)})
		assert.Equal(t, "addr:192.0.2.7", k1)
		assert.Equal(t, k1, k2, "a self-reported name does not enlarge the share")
	})
}
