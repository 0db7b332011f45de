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
	mu.Lock()
	if pos == block {
		if _, err := rand.Read(pool[:]); err != nil {
			mu.Unlock()
			return uuid.NewString() // crypto/rand never fails on supported platforms
		}
		pos = 0
	}
	copy(u[:], pool[pos:pos+16])
	pos += 16
	mu.Unlock()
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}
