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

// A window reopens when it has room again, and also when the seq it waits
// for next is one it refused, however full it is: nothing else would
// advance it, and the refused message would wait for its retransmission.
func TestWindowReopensForARefusedNextSeq(t *testing.T) {
	for _, tc := range []struct {
		name    string
		marks   []uint64
		refused []uint64
		want    int // what reopen returns
	}{
		{"room again", []uint64{1, 3}, []uint64{9}, 1},
		{"full, the refused seq is not next", []uint64{1, 3, 4, 5, 6}, []uint64{9}, 0},
		{"full, the next seq was refused", []uint64{1, 3, 4, 5, 6}, []uint64{2, 9}, 2},
		{"nothing refused", []uint64{1, 3, 4, 5, 6}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &window{limit: 4, loaded: true}
			for _, s := range tc.marks {
				w.mark(s)
			}
			for _, s := range tc.refused {
				w.refuse(s)
			}
			assert.Equal(t, tc.want, w.reopen())
			assert.Equal(t, 0, w.reopen(), "once")
		})
	}
}
