//go:build !keel_omit2025

package middleware

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// A stateless handler's 2025 session (initialized already: no handshake,
// one request) from an address without a token is keyed by the address.
func TestDefaultClientKeyStatelessLegacy(t *testing.T) {
	ctx := context.Background()
	reg := registry.New(nil)
	registry.MustRegister(reg, "whoami", "Reports the client key.", func(ctx context.Context, _ struct{}) (string, error) {
		return DefaultClientKey(ctx, mcp.ToolCallFromContext(ctx)), nil
	}, nil)
	addr := transport.WithPeer(ctx, transport.PeerOfAddr(netip.MustParseAddr("192.0.2.7")))
	legacy := transport.WithStatelessRequest(addr, transport.StatelessRequest{ProtocolVersion: "2025-06-18"})
	ct, st := transport.NewPipe(nil)
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tools: Standard(reg, nil)})
	go func() { _ = srv.Run(legacy, st) }()
	defer ct.Close()
	require.NoError(t, ct.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)))
	b, err := ct.Read(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"text":"addr:192.0.2.7"`)
}
