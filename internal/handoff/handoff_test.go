package handoff_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/revision"
)

// The abort hook runs once: when Abort comes after OnAbort, at Abort; when
// it comes before, at OnAbort; a later registration replaces an earlier
// one; Abort without a hook is harmless.
func TestAbort(t *testing.T) {
	var x handoff.Request
	x.Abort() // no hook yet
	n := 0
	x.OnAbort(func() { n++ })
	assert.Equal(t, 1, n, "aborted already: ended at once")

	var y handoff.Request
	first, second := 0, 0
	y.OnAbort(func() { first++ })
	y.OnAbort(func() { second++ })
	y.Abort()
	y.Abort()
	assert.Equal(t, 0, first, "replaced")
	assert.Equal(t, 1, second, "once")
}

// Abort and OnAbort race: the hook still runs exactly once.
func TestAbortRace(t *testing.T) {
	for range 100 {
		var x handoff.Request
		var n atomic.Int32
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); x.OnAbort(func() { n.Add(1) }) }()
		go func() { defer wg.Done(); x.Abort() }()
		wg.Wait()
		assert.Equal(t, int32(1), n.Load())
	}
}

// The error code the server records gives the answer's HTTP status.
func TestErrorCode(t *testing.T) {
	var x handoff.Request
	assert.Zero(t, x.ErrorCode())
	assert.Equal(t, 200, x.Status())
	for code, status := range map[int64]int{-32601: 404, revision.CodeHeaderMismatch: 400, revision.CodeMissingClientCapability: 400,
		revision.CodeUnsupportedProtocolVersion: 400, -32602: 200, -32603: 200, 0: 200} {
		x.SetErrorCode(code)
		assert.Equal(t, code, x.ErrorCode())
		assert.Equal(t, status, x.Status(), code)
	}
}
