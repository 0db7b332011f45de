package aacp

import "math/rand/v2"

// newUUID returns a random (version 4, RFC 4122 variant) UUID string. Its
// 122 random bits come from math/rand/v2's per-thread ChaCha8 generator,
// which the runtime seeds from the system's entropy: unique in practice,
// and free of the lock a shared crypto/rand buffer needs, which matters on
// the hot path (three ids per request).
func newUUID() string {
	hi, lo := rand.Uint64(), rand.Uint64()
	hi = hi&^(0xf<<12) | 0x4<<12 // version 4
	lo = lo&^(0x3<<62) | 0x2<<62 // variant 10
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
