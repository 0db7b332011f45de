//go:build !keel_omit2025

package streamhttp

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An event written with an id reads back with it, and the id names its
// stream and seq.
func TestSSEEventRoundTrip(t *testing.T) {
	b := appendSSEEvent(nil, eventID("7", 3), 1500*time.Millisecond, []byte("line1\nline2"))
	assert.Equal(t, "id: 7_3\nretry: 1500\ndata: line1\ndata: line2\n\n", string(b))
	ev, err := newSSEReader(strings.NewReader(string(b)), 1<<10).next()
	require.NoError(t, err)
	assert.Equal(t, "line1\nline2", string(ev.data))
	s, n, ok := parseEventID(ev.id)
	assert.True(t, ok)
	assert.Equal(t, "7", s)
	assert.Equal(t, uint64(3), n)
	for _, bad := range []string{"", "_1", "7", "7_x", "7_-1"} {
		_, _, ok := parseEventID(bad)
		assert.False(t, ok, bad)
	}
}
