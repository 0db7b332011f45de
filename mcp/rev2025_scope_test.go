//go:build !keel_omit2025

package mcp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEachMessageOfASessionIsServedInItsScope: on an initialized 2025
// session, a request, a batch entry and a notification without the
// 2026-07-28 _meta are served in the session's scope, at the revision
// initialize negotiated; a request or notification that names 2026-07-28
// on the same connection is served in its own.
func TestEachMessageOfASessionIsServedInItsScope(t *testing.T) {
	p := startScopeProbe(t)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, true)
	assert.IsType(t, sessionScope{}, p.last().scope, "initialize")
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	p.send(`{"jsonrpc":"2.0","id":98,"method":"ping"}`, true) // the session is running

	tests := []struct {
		name, line, method string
		answer             bool
		scope              scope
		version            string
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"acme/probe"}`, "acme/probe", true, sessionScope{}, Version20250326},
		{"batch entry", `[{"jsonrpc":"2.0","id":2,"method":"acme/probe"}]`, "acme/probe", true, sessionScope{}, Version20250326},
		{"notification", `{"jsonrpc":"2.0","method":"acme/note"}`, "acme/note", false, sessionScope{}, Version20250326},
		{"2026-07-28 request", `{"jsonrpc":"2.0","id":3,"method":"acme/probe","params":{` + scopeMeta + `}}`, "acme/probe", true, &modernReq{}, Version20260728},
		{"2026-07-28 notification", `{"jsonrpc":"2.0","method":"acme/note","params":{` + scopeMeta + `}}`, "acme/note", false, &modernReq{}, Version20260728},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.mu.Lock()
			n := len(p.seen)
			p.mu.Unlock()
			p.send(tt.line, tt.answer)
			p.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`, true) // what came before it has been served
			p.mu.Lock()
			defer p.mu.Unlock()
			require.Greater(t, len(p.seen), n)
			seen := p.seen[n]
			assert.Equal(t, tt.method, seen.method)
			assert.IsType(t, tt.scope, seen.scope)
			assert.Equal(t, tt.version, seen.version)
		})
	}
}
