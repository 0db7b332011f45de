package pgtest

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

// Without the variable, skipped tests leave one line where `go test ./...`
// shows it (not only in -v output), however many tests skip.
func TestSkipNoticeOncePerBinary(t *testing.T) {
	var out bytes.Buffer
	saved := openNotice
	openNotice = func() (io.WriteCloser, error) { return nopCloser{&out}, nil }
	noticeOnce = sync.Once{}
	t.Cleanup(func() { openNotice = saved })
	t.Setenv(EnvDSN, "")

	for range 3 {
		t.Run("skipped", func(t *testing.T) {
			DSN(t)
			t.Error("DSN returned without the variable")
		})
	}
	assert.Equal(t, 1, strings.Count(out.String(), "\n"), out.String())
	assert.Contains(t, out.String(), "pgtest: PostgreSQL tests skipped: set KEEL_TEST_POSTGRES_DSN")
}
