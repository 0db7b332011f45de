package transport_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

type otherKey struct{}

// A StatelessRequest placed in a context is found there, and in the
// contexts derived from it; the context keeps its parent's values and
// cancellation; the innermost StatelessRequest wins.
func TestStatelessRequestContext(t *testing.T) {
	_, ok := transport.StatelessRequestFromContext(context.Background())
	assert.False(t, ok, "none placed")

	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx := transport.WithStatelessRequest(parent, transport.StatelessRequest{ProtocolVersion: "2026-07-28"})
	for name, c := range map[string]context.Context{
		"placed":  ctx,
		"derived": context.WithValue(ctx, otherKey{}, "w"),
		"peer":    transport.WithPeer(ctx, transport.Peer{Key: "k"}),
	} {
		sr, ok := transport.StatelessRequestFromContext(c)
		require.True(t, ok, name)
		assert.Equal(t, "2026-07-28", sr.ProtocolVersion, name)
	}
	assert.Equal(t, "v", ctx.Value(otherKey{}), "the parent's values")

	inner := transport.WithStatelessRequest(ctx, transport.StatelessRequest{ProtocolVersion: "2025-11-25"})
	sr, _ := transport.StatelessRequestFromContext(inner)
	assert.Equal(t, "2025-11-25", sr.ProtocolVersion, "the innermost wins")

	require.NoError(t, ctx.Err())
	cancel()
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "the parent's cancellation")
}
