//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// PeerFromContext: the peer the transport placed in the context, else the
// verified token, else the connection; the zero Peer outside a Server.
func TestPeerFromContext(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, mcp.Peer{}, mcp.PeerFromContext(ctx))
	addr := transport.PeerOfAddr(netip.MustParseAddr("192.0.2.1"))
	assert.Equal(t, addr, mcp.PeerFromContext(transport.WithPeer(ctx, addr)))
	tok := transport.WithTokenInfo(ctx, &transport.TokenInfo{Subject: "ada"})
	assert.Equal(t, "subject:ada", mcp.PeerFromContext(tok).Key)
	assert.Equal(t, addr, mcp.PeerFromContext(transport.WithPeer(tok, addr)), "the transport's peer comes first")

	// Inside a handler on a connection without a peer: the connection.
	keys := make(chan string, 2)
	o := mcptest.ServerOptions(nil)
	o.Methods = map[string]mcp.MethodHandler{"x/peer": func(ctx context.Context, _ *mcp.Request) (any, error) {
		keys <- mcp.PeerFromContext(ctx).Key
		return mcp.EmptyResult{}, nil
	}}
	srv := mcp.NewServer(o)
	for range 2 {
		ct, st := transport.NewPipe(nil)
		go func() { _ = srv.Run(ctx, st) }()
		c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, c.Connect(ctx, ct))
		require.NoError(t, c.Call(ctx, "x/peer", nil, nil))
		c.Close()
	}
	k1, k2 := <-keys, <-keys
	assert.True(t, strings.HasPrefix(k1, "conn:"), k1)
	assert.NotEqual(t, k1, k2, "each connection is a peer of its own")
}
