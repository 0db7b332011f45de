//go:build !keel_omit2025

package mcp_test

import (
	"testing"

	"github.com/keelmcp/keel/mcp"
)

// A tools/call of a 2025 session over an in-memory connection, without
// and with a middleware.
func BenchmarkAnswerSessionToolCall(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchAnswer(b, nil, benchInit, benchCall+`}}`) })
	b.Run("middleware", func(b *testing.B) { benchAnswer(b, []mcp.Middleware{passThrough}, benchInit, benchCall+`}}`) })
}
