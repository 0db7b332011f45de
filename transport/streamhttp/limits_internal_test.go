package streamhttp

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

// Every bound of Options is finite by default; a negative value turns it
// off. (The bounds of sessions: rev2025_limits_internal_test.go.)
func TestOptionsBoundedByDefault(t *testing.T) {
	serve := func(context.Context, transport.Transport) error { return nil }
	h := NewHandler(&Options{Serve: serve})
	assert.Equal(t, DefaultMaxStreams, h.opts.MaxStreams)
	assert.Equal(t, DefaultMaxStreamsPerPeer, h.opts.MaxStreamsPerPeer)
	assert.Equal(t, DefaultBodyReadTimeout, h.opts.BodyReadTimeout)
	assert.Equal(t, DefaultRefusalLogsPerSecond, h.opts.RefusalLogsPerSecond)
	assert.LessOrEqual(t, DefaultBodyReadTimeout, 30*time.Second)

	off := NewHandler(&Options{Serve: serve, MaxStreams: -1, BodyReadTimeout: -1, RefusalLogsPerSecond: -1})
	assert.Negative(t, off.opts.MaxStreams)
	assert.Negative(t, off.opts.BodyReadTimeout)
	assert.Negative(t, off.opts.RefusalLogsPerSecond)
}

// A value from a peer is logged cut to 64 bytes (at a rune boundary),
// with its length.
func TestClipped(t *testing.T) {
	assert.Equal(t, "short", clipped("k", "short").Value.String())
	long := strings.Repeat("x", 63) + "é" + "yyy" // byte 64 is inside "é"
	assert.Equal(t, strings.Repeat("x", 63)+"...(68 bytes)", clipped("k", long).Value.String())
}

// A body's buffer grows with what arrived and never beyond the limit,
// whatever the reader; one byte more is refused.
func TestReadLimited(t *testing.T) {
	const limit = 10_000
	for _, size := range []int{0, 1, 511, 512, 513, 5000, limit} {
		// The announced length is unknown, right, too small, or the
		// limit's (a slow body announcing the most it may send).
		for _, announced := range []int64{-1, int64(size), int64(size / 2), limit} {
			body := strings.Repeat("x", size)
			got, err := readLimited(http.MaxBytesReader(nil, io.NopCloser(iotest.OneByteReader(strings.NewReader(body))), limit), limit, announced)
			require.NoError(t, err, size)
			assert.Equal(t, body, string(got))
			assert.LessOrEqual(t, cap(got), limit+1)
			assert.LessOrEqual(t, cap(got), max(512, 2*size))
			if announced == int64(size) && size < 512 {
				assert.Equal(t, size+1, cap(got), "a small body announced gets one buffer of its size")
			}
		}
	}
	_, err := readLimited(http.MaxBytesReader(nil, io.NopCloser(strings.NewReader(strings.Repeat("x", limit+1))), limit), limit, -1)
	var tooLarge *http.MaxBytesError
	assert.ErrorAs(t, err, &tooLarge)
	// Without MaxBytesReader in front, the limit still holds.
	got, err := readLimited(strings.NewReader(strings.Repeat("x", 3*limit)), limit, 10)
	assert.ErrorAs(t, err, &tooLarge)
	assert.LessOrEqual(t, cap(got), limit+1)
}
