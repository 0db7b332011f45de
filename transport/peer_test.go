package transport_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/transport"
)

// A peer's key comes from what the network or a verified credential says:
// IPv4 addresses as such, IPv6 addresses by their /64, tokens by subject
// else client id; keys are bounded in bytes.
func TestPeerKeys(t *testing.T) {
	addrs := []struct {
		addr, key string
	}{
		{"192.0.2.1", "addr:192.0.2.1"},
		{"::ffff:192.0.2.1", "addr:192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", "addr:2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::9", "addr:2001:db8:1:2::/64"},
		{"fe80::1%eth0", "addr:fe80::/64"},
		{"::1", "addr:::/64"},
	}
	for _, c := range addrs {
		p := transport.PeerOfAddr(netip.MustParseAddr(c.addr))
		assert.Equal(t, c.key, p.Key, c.addr)
		assert.True(t, p.Addr.IsValid())
	}
	assert.Equal(t, transport.Peer{}, transport.PeerOfAddr(netip.Addr{}))

	tokens := []struct {
		name string
		ti   *transport.TokenInfo
		key  string
		ok   bool
	}{
		{"subject", &transport.TokenInfo{Subject: "ada", ClientID: "app"}, "subject:ada", true},
		{"client id", &transport.TokenInfo{ClientID: "app"}, "client:app", true},
		{"neither", &transport.TokenInfo{Scopes: []string{"x"}}, "", false},
		{"no token", nil, "", false},
	}
	for _, c := range tokens {
		p, ok := transport.PeerOfToken(c.ti)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.key, p.Key, c.name)
	}
	long, _ := transport.PeerOfToken(&transport.TokenInfo{Subject: strings.Repeat("s", 1000)})
	assert.LessOrEqual(t, len(long.Key), transport.MaxPeerKeyBytes)
	assert.True(t, strings.HasPrefix(long.Key, "sha256:"), long.Key)
	other, _ := transport.PeerOfToken(&transport.TokenInfo{Subject: strings.Repeat("s", 999)})
	assert.NotEqual(t, long.Key, other.Key)
	assert.Equal(t, "conn:c1", transport.PeerOfConn("c1").Key)
}

func TestPeerContext(t *testing.T) {
	ctx := context.Background()
	_, ok := transport.PeerFromContext(ctx)
	assert.False(t, ok)
	_, ok = transport.PeerFromContext(transport.WithPeer(ctx, transport.Peer{}))
	assert.False(t, ok, "a peer without key is none")
	p := transport.PeerOfConn("c1")
	got, ok := transport.PeerFromContext(transport.WithPeer(ctx, p))
	assert.True(t, ok)
	assert.Equal(t, p, got)
}
