package revision_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/internal/revision"
)

// Served: a request names a revision served per request only when it is of
// the per-request era and the server lists it; a negotiated revision is
// never served in this form, and an unknown later one is refused.
func TestServed(t *testing.T) {
	all := []string{revision.V20260728, revision.V20251125, revision.V20250618}
	for _, tc := range []struct {
		supported []string
		v         string
		want      bool
	}{
		{all, revision.V20260728, true},
		{all, revision.V20251125, false}, // negotiated, though listed
		{all, "2099-01-01", false},       // per-request era, not listed
		{[]string{"2099-01-01"}, "2099-01-01", true},
		{[]string{revision.V20251125}, revision.V20260728, false},
		{nil, revision.V20260728, false},
		{all, "", false},
	} {
		assert.Equal(t, tc.want, revision.Served(tc.supported, tc.v), "%v %q", tc.supported, tc.v)
	}
}

// UnsupportedVersion: the one -32022 of both sides; the version is quoted
// as the caller's medium needs.
func TestUnsupportedVersion(t *testing.T) {
	e := revision.UnsupportedVersion(`2099"01`, strconv.Quote)
	assert.Equal(t, int64(revision.CodeUnsupportedProtocolVersion), e.Code)
	assert.Equal(t, `Unsupported protocol version: "2099\"01"`, e.Message)
	assert.Equal(t, 400, revision.ErrorStatus(e.Code))
}

// PrimingEvents: 2025-11-25 and later negotiated revisions prime their
// streams; an unset revision does not.
func TestPrimingEvents(t *testing.T) {
	for v, want := range map[string]bool{"": false, revision.V20241105: false, revision.V20250618: false, revision.V20251125: true} {
		assert.Equal(t, want, revision.PrimingEvents(v), v)
	}
	assert.Equal(t, revision.V20250326, revision.DefaultHeaderVersion)
}
