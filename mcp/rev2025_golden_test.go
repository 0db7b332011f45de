//go:build !keel_omit2025

package mcp_test

import (
	"flag"
	"testing"

	"github.com/keelmcp/keel/internal/mcptest"
)

var update = flag.Bool("update", false, "rewrite the expected lines of the golden transcripts in testdata/transcripts")

// TestGoldenTranscripts plays every testdata/transcripts/*.txtar against a
// deterministic server (see mcptest.RunTranscripts for the format). Every
// message the server emits is checked against the official schema of the
// revision negotiated in that session. Run with -update to rewrite the
// expected lines from the server's actual output, then review the diff.
func TestGoldenTranscripts(t *testing.T) {
	mcptest.RunTranscripts(t, "testdata/transcripts/*.txtar", &mcptest.TranscriptOptions{Update: *update})
}
