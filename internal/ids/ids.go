// Package ids generates random UUID v4 strings cheaply: random bytes are
// read from crypto/rand in blocks and formatted with google/uuid.
package ids

import (
	"crypto/rand"
	"sync"

	"github.com/google/uuid"
)

const block = 16 * 128

var (
	mu   sync.Mutex
	pool [block]byte
	pos  = block
)

// NewUUID returns a new random (version 4) UUID string.
func NewUUID() string {
	var u uuid.UUID
	if !next(&u) {
		return uuid.NewString() // crypto/rand never fails on supported platforms
	}
	return u.String()
}

// NewUUIDPair returns two new random UUID strings, as NewUUID makes
// them, held by one allocation.
func NewUUIDPair() (string, string) {
	var u, v uuid.UUID
	if !next(&u) || !next(&v) {
		return uuid.NewString(), uuid.NewString()
	}
	var buf [2 * 36]byte
	encode(buf[:36], &u)
	encode(buf[36:], &v)
	s := string(buf[:])
	return s[:36], s[36:]
}

// next fills u with the next random bytes of the pool, marked version 4
// of the RFC 4122 variant; false when crypto/rand fails.
func next(u *uuid.UUID) bool {
	mu.Lock()
	if pos == block {
		if _, err := rand.Read(pool[:]); err != nil {
			mu.Unlock()
			return false
		}
		pos = 0
	}
	copy(u[:], pool[pos:pos+16])
	pos += 16
	mu.Unlock()
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return true
}

// encode writes u into dst (36 bytes) in the form uuid.UUID.String gives
// it: xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lower case.
func encode(dst []byte, u *uuid.UUID) {
	const hex = "0123456789abcdef"
	j := 0
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst[j] = '-'
			j++
		}
		dst[j], dst[j+1] = hex[b>>4], hex[b&0x0f]
		j += 2
	}
}
