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

func BenchmarkNewUUID(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = NewUUID()
	}
}
