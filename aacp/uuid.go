package aacp

import (
	"math/rand/v2"
	"time"
)

// newUUID returns a UUID string in the version 4, RFC 4122 variant layout
// that the envelope requires (IsUUIDv4), whose first 48 bits are the Unix
// time in milliseconds and whose other 74 free bits are random. Ids a Node
// creates therefore sort by creation time (to the millisecond), so a
// durable ledger that keys its rows by them inserts at the right edge of
// its B-trees instead of touching a random page per row; 74 random bits
// per millisecond keep them unique in practice. The random bits come from
// math/rand/v2's per-thread ChaCha8 generator, which the runtime seeds from
// the system's entropy, free of the lock a shared crypto/rand buffer needs,
// which matters on the hot path (three ids per request).
func newUUID() string {
	return formatUUID(uint64(time.Now().UnixMilli()), rand.Uint64(), rand.Uint64())
}

// formatUUID lays out ms (its low 48 bits), then 12 bits of r1 and 62 bits
// of r2 around the version (4) and variant (10) bits.
func formatUUID(ms, r1, r2 uint64) string {
	hi := ms<<16 | 0x4<<12 | r1&0xfff
	lo := r2&^(0x3<<62) | 0x2<<62
	var b [36]byte
	const hex = "0123456789abcdef"
	put := func(at int, v uint64, n int) {
		for i := n - 1; i >= 0; i-- {
			b[at+i] = hex[v&0xf]
			v >>= 4
		}
	}
	put(0, hi>>32, 8)
	b[8] = '-'
	put(9, hi>>16, 4)
	b[13] = '-'
	put(14, hi, 4)
	b[18] = '-'
	put(19, lo>>48, 4)
	b[23] = '-'
	put(24, lo, 12)
	return string(b[:])
}
