//go:build !keel_omit2025

package mcp_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// TestBuiltinsReadMiddlewareParams2025: on a 2025-11-25 session too, a
// middleware that decoded the params of a built-in method with Params
// spares its handler the decoding.
func TestBuiltinsReadMiddlewareParams2025(t *testing.T) {
	for _, decode := range []bool{true, false} {
		t.Run(map[bool]string{true: "middleware decodes", false: "handler decodes"}[decode], func(t *testing.T) {
			s := &paramsSeen{mw: map[string]any{}, again: map[string]bool{}}
			c := connectRaw(t, mcp.NewServer(paramsSeenOptions(s, decode)), true, false)
			checkBuiltinsReadMiddlewareParams(t, c, s, "", decode)
		})
	}
}

// TestCompletionContextByRevision: completion/complete hands the source
// params.context from clients of 2025-06-18 and later only (an older
// client cannot have meant one); dropping it leaves the value the
// middleware decoded as it was.
func TestCompletionContextByRevision(t *testing.T) {
	for _, tc := range []struct {
		version     string
		wantContext bool
	}{
		{mcp.Version20250326, false},
		{mcp.Version20250618, true},
		{mcp.Version20251125, true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			s := &paramsSeen{mw: map[string]any{}, again: map[string]bool{}}
			c := connectRaw(t, mcp.NewServer(paramsSeenOptions(s, true)), false, false)
			c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + tc.version + `","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
			require.Contains(t, c.recv(), "result")
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			c.send(`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"},"context":{"arguments":{"x":"y"}}}}`)
			require.Contains(t, c.recv(), "result")
			s.mu.Lock()
			defer s.mu.Unlock()
			mw := s.mw["completion/complete"].(*mcp.CompleteParams)
			require.NotNil(t, mw.Context, "the middleware's value keeps what was sent")
			assert.Equal(t, map[string]string{"x": "y"}, mw.Context.Arguments)
			if tc.wantContext {
				assert.Same(t, mw, s.complete)
				return
			}
			assert.Nil(t, s.complete.Context)
			assert.Equal(t, mw.Argument, s.complete.Argument)
		})
	}
}
