package ids

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestNewUUIDIsUniqueV4(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 3*block/16; i++ { // crosses several refills
		s := NewUUID()
		u, err := uuid.Parse(s)
		require.NoError(t, err)
		require.Equal(t, uuid.Version(4), u.Version())
		require.Equal(t, uuid.RFC4122, u.Variant())
		require.False(t, seen[s], "duplicate %s", s)
		seen[s] = true
	}
}

// NewUUIDPair makes two distinct version 4 UUIDs, written as
// uuid.UUID.String writes them, with one allocation.
func TestNewUUIDPair(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < block/16; i++ { // crosses a refill
		a, b := NewUUIDPair()
		for _, s := range []string{a, b} {
			u, err := uuid.Parse(s)
			require.NoError(t, err)
			require.Equal(t, uuid.Version(4), u.Version())
			require.Equal(t, uuid.RFC4122, u.Variant())
			require.Equal(t, u.String(), s)
			require.False(t, seen[s], "duplicate %s", s)
			seen[s] = true
		}
	}
	for _, u := range []uuid.UUID{{}, uuid.Max, uuid.MustParse("0123abcd-4567-89ef-fedc-ba9876543210")} {
		var buf [36]byte
		encode(buf[:], &u)
		require.Equal(t, u.String(), string(buf[:]))
	}
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _, _ = NewUUIDPair() }))
}

func BenchmarkNewUUID(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = NewUUID()
	}
}
