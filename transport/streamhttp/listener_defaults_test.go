package streamhttp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The default MaxConns is nine tenths of the open-file limit where that is
// lower, and the default MaxConnsPerPeer a tenth of MaxConns where that is
// lower (at least 1), so that one address never takes every connection; a
// MaxConnsPerPeer set above MaxConns is lowered to it.
func TestListenerDefaults(t *testing.T) {
	cases := []struct {
		name             string
		opts             *ListenerOptions
		fileLimit        int
		conns, connsPeer int
	}{
		{"no open-file limit", nil, 0, DefaultMaxConns, DefaultMaxConnsPerPeer},
		{"a high open-file limit", nil, 1 << 20, DefaultMaxConns, DefaultMaxConnsPerPeer},
		{"an open-file limit of 1024", nil, 1024, 918, 91},
		{"an open-file limit of 20", nil, 20, 18, 1},
		{"an open-file limit of 1", nil, 1, 1, 1},
		{"a small MaxConns", &ListenerOptions{MaxConns: 50}, 0, 50, 5},
		{"no bound in all", &ListenerOptions{MaxConns: -1}, 1024, -1, DefaultMaxConnsPerPeer},
		{"a per-peer bound above the total is lowered", &ListenerOptions{MaxConnsPerPeer: 5000}, 1024, 918, 918},
		{"a per-peer bound below the total is kept", &ListenerOptions{MaxConnsPerPeer: 500}, 1024, 918, 500},
		{"no per-peer bound", &ListenerOptions{MaxConnsPerPeer: -1}, 1024, 918, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := listenerDefaults(c.opts, c.fileLimit)
			assert.Equal(t, c.conns, o.MaxConns, "MaxConns")
			assert.Equal(t, c.connsPeer, o.MaxConnsPerPeer, "MaxConnsPerPeer")
			assert.NotNil(t, o.Logger)
			assert.Equal(t, DefaultRefusalLogsPerSecond, o.LogsPerSecond)
		})
	}
}
