package aacp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A full window refuses seqs beyond the highest received, but still takes
// the seqs that fill its gaps (up to twice its limit), so that it can
// advance.
func TestWindowFullTakesGapFillers(t *testing.T) {
	w := &window{limit: 3, loaded: true}
	for _, s := range []uint64{3, 5, 7} {
		assert.True(t, w.fits(s))
		w.mark(s)
	}
	assert.False(t, w.fits(8), "beyond the highest: refused")
	assert.True(t, w.fits(1), "the next expected seq")
	assert.True(t, w.fits(4), "a gap filler")
	w.mark(4)
	w.mark(6)
	w.mark(2)
	assert.False(t, w.fits(9))
	assert.Equal(t, uint64(0), w.ack)
	w.mark(1)
	assert.Equal(t, uint64(7), w.ack)
	assert.Empty(t, w.above)
	assert.True(t, w.fits(9))
}
