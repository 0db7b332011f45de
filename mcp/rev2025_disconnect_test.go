//go:build !keel_omit2025

package mcp_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// blockingTools has one tool, "wait", that blocks until its context ends
// and reports that on ended, and "quick", which answers at once.
type blockingTools struct {
	started chan struct{}
	ended   chan struct{}
}

func newBlockingTools() *blockingTools {
	return &blockingTools{started: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
}

func (b *blockingTools) ListTools(context.Context) ([]*mcp.Tool, error) {
	schema := []byte(`{"type":"object"}`)
	return []*mcp.Tool{{Name: "quick", InputSchema: schema}, {Name: "wait", InputSchema: schema}}, nil
}

func (b *blockingTools) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if call.Name == "quick" {
		return mcp.TextResult("quick"), nil
	}
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.ended <- struct{}{}
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		return mcp.TextResult("finished"), nil
	}
}

func (b *blockingTools) waitEnded(t *testing.T, what string) {
	t.Helper()
	select {
	case <-b.ended:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the handler still runs after the client went away", what)
	}
}

const goneInitLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// When the client goes away, the handlers still running for it end: on the
// in-memory pipe, on stdio whose output broke, and on an HTTP session whose
// POST was abandoned.
func TestHandlersEndWhenTheClientGoesAway(t *testing.T) {
	t.Run("pipe", func(t *testing.T) {
		tools := newBlockingTools()
		ct, wait := mcptest.StartServer(t, mcptest.ServerOptions(tools), nil)
		c := &rawConn{t: t, tr: ct}
		c.send(goneInitLine)
		c.recv()
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)
		<-tools.started
		require.NoError(t, ct.Close())
		tools.waitEnded(t, "pipe")
		require.NoError(t, wait())
	})

	t.Run("stdio with a broken output", func(t *testing.T) {
		tools := newBlockingTools()
		inR, inW, err := os.Pipe()
		require.NoError(t, err)
		outR, outW, err := os.Pipe()
		require.NoError(t, err)
		defer inW.Close()
		srv := mcp.NewServer(mcptest.ServerOptions(tools))
		done := make(chan error, 1)
		go func() { done <- srv.Run(context.Background(), transport.NewStdioStreams(inR, outW, nil)) }()
		out := bufio.NewReader(outR)
		send := func(line string) {
			_, err := io.WriteString(inW, line+"\n")
			require.NoError(t, err)
		}
		send(goneInitLine)
		_, err = out.ReadString('\n')
		require.NoError(t, err)
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`)
		<-tools.started
		require.NoError(t, outR.Close()) // the client stops reading: its end of the output is gone
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick"}}`)
		tools.waitEnded(t, "stdio")
		inW.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return")
		}
	})

	t.Run("an abandoned HTTP POST", func(t *testing.T) {
		tools := newBlockingTools()
		srv := mcp.NewServer(mcptest.ServerOptions(tools))
		h := streamhttp.NewServerHandler(srv, &streamhttp.Options{ResponseMode: streamhttp.ResponseJSON, Logger: slog.New(slog.DiscardHandler)})
		hs := httptest.NewServer(h)
		defer hs.Close()
		defer h.Close()
		post := func(ctx context.Context, session, body string) *http.Response {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil
			}
			return resp
		}
		resp := post(context.Background(), "", goneInitLine)
		require.NotNil(t, resp)
		sid := resp.Header.Get("Mcp-Session-Id")
		resp.Body.Close()
		require.NotEmpty(t, sid)
		resp = post(context.Background(), sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		require.NotNil(t, resp)
		resp.Body.Close()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-tools.started
			cancel() // the client closes the connection before the answer
		}()
		if resp := post(ctx, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait"}}`); resp != nil {
			resp.Body.Close()
		}
		tools.waitEnded(t, "http")
		// The session lives on.
		resp = post(context.Background(), sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick"}}`)
		require.NotNil(t, resp)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Contains(t, string(b), `"quick"`)
	})
}

func TestConnectNilTransport(t *testing.T) {
	c := mcp.NewClient(nil)
	err := c.Connect(context.Background(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil transport")
}

// A 2026-07-28 POST is served with the POST's own context: its handler
// ends when the client goes away, and when the Handler closes while the
// client still waits.
func TestModernPOSTHandlerEnds(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	start := func(t *testing.T) (*blockingTools, *streamhttp.Handler, func(ctx context.Context) *http.Response) {
		tools := newBlockingTools()
		h := streamhttp.NewServerHandler(mcp.NewServer(mcptest.ServerOptions(tools)), &streamhttp.Options{Logger: slog.New(slog.DiscardHandler)})
		hs := httptest.NewServer(h)
		t.Cleanup(hs.Close)
		t.Cleanup(func() { _ = h.Close() })
		post := func(ctx context.Context) *http.Response {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(call))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", "wait")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil
			}
			return resp
		}
		return tools, h, post
	}
	t.Run("the client goes away", func(t *testing.T) {
		tools, _, post := start(t)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-tools.started
			cancel()
		}()
		if resp := post(ctx); resp != nil {
			resp.Body.Close()
		}
		tools.waitEnded(t, "modern POST, client gone")
	})
	t.Run("the Handler closes", func(t *testing.T) {
		tools, h, post := start(t)
		go func() {
			<-tools.started
			_ = h.Close()
		}()
		if resp := post(context.Background()); resp != nil {
			resp.Body.Close()
		}
		tools.waitEnded(t, "modern POST, Handler closed")
	})
}
