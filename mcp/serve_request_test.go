package mcp_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// prereadTransport hands ServeRequest its own reading of the message, as
// streamable HTTP does for a 2026-07-28 POST, and keeps what is written.
type prereadTransport struct {
	pre      []byte // the message it says it read
	maxDepth int    // the depth it says it read it with
	ok       bool   // whether it has a reading

	mu      sync.Mutex
	written [][]byte
}

func (p *prereadTransport) PrereadMessage() (*jsonrpc.Message, int, bool, mcp.RequestMeta, *mcp.Error, bool) {
	if !p.ok {
		return nil, 0, false, mcp.RequestMeta{}, nil, false
	}
	m, derr := jsonrpc.Decode(p.pre, jsonrpc.DefaultMaxDepth)
	if derr != nil {
		panic(derr.Message)
	}
	modern, meta, e := mcp.ClassifyRequest(m.Params)
	return &m, p.maxDepth, modern, meta, e, true
}

func (p *prereadTransport) Read(ctx context.Context) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (p *prereadTransport) Write(_ context.Context, msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written = append(p.written, append([]byte(nil), msg...))
	return nil
}

func (p *prereadTransport) Close() error { return nil }

func (p *prereadTransport) Kind() string { return "test" }

// ServeRequest serves the transport's reading of a modern request instead
// of reading the message again, unless the transport read it with a
// looser depth limit than the server's, or has no reading.
func TestServeRequestTakesTheTransportsReading(t *testing.T) {
	call := func(id, tool string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	}
	answer := func(text string) func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		return func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent(text)}}, nil
		}
	}
	opts := mcptest.ServerOptions(handlerTools{"a": answer("from the message"), "b": answer("from the reading")})
	srv := mcp.NewServer(opts)
	for _, tc := range []struct {
		name     string
		ok       bool
		maxDepth int
		wantID   string
		wantText string
	}{
		{"reading taken", true, srv.Options().MaxDepth, `"id":7`, "from the reading"},
		{"looser depth: read again", true, srv.Options().MaxDepth + 1, `"id":1`, "from the message"},
		{"no reading", false, 0, `"id":1`, "from the message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &prereadTransport{pre: call("7", "b"), maxDepth: tc.maxDepth, ok: tc.ok}
			require.NoError(t, srv.ServeRequest(context.Background(), tr, call("1", "a")))
			require.Len(t, tr.written, 1)
			assert.Contains(t, string(tr.written[0]), tc.wantID)
			assert.Contains(t, string(tr.written[0]), tc.wantText)
		})
	}
}
