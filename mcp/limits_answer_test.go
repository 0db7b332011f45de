package mcp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// rawExchange sends one message and returns the one answer, on some
// transport: lines over a pipe or stdio, a POST over HTTP.
type rawExchange func(t *testing.T, msg string) string

// rawStream is a raw connection to srv over a stream transport (the
// in-memory pipe or stdio): it initializes at revision v and returns an
// exchange of one message for one answer.
func rawStream(t *testing.T, srv *mcp.Server, kind, v string) rawExchange {
	t.Helper()
	var client, server transport.Transport
	switch kind {
	case "memory":
		client, server = transport.NewPipe(nil)
	case "stdio":
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		client = transport.NewStdioStreams(cr, cw, nil)
		server = transport.NewStdioStreams(sr, sw, nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, server) }()
	t.Cleanup(func() { client.Close(); cancel(); <-done })
	ex := func(t *testing.T, msg string) string {
		t.Helper()
		require.NoError(t, client.Write(ctx, []byte(msg)))
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		b, err := client.Read(rctx)
		require.NoError(t, err, "the answer comes promptly")
		return string(b)
	}
	ex(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	require.NoError(t, client.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
	return ex
}

// rawHTTP is a raw 2025 session with srv over streamable HTTP: each
// exchange is one POST, answered within 5 seconds.
func rawHTTP(t *testing.T, srv *mcp.Server, v string) rawExchange {
	t.Helper()
	h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); hs.Close() })
	sid := ""
	ex := func(t *testing.T, msg string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(msg))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "the POST is answered promptly")
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			sid = s
		}
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the POST is answered promptly")
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for _, line := range strings.Split(string(b), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok && d != "" {
					return d
				}
			}
		}
		return string(b)
	}
	ex(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	ex(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return ex
}

func exchanges(t *testing.T, srv *mcp.Server, v string) map[string]rawExchange {
	return map[string]rawExchange{
		"memory": rawStream(t, srv, "memory", v),
		"stdio":  rawStream(t, srv, "stdio", v),
		"http":   rawHTTP(t, srv, v),
	}
}

// The result caps agree with the message limit: a result at the default
// cap, with its envelope, fits in a message.
func TestDefaultResultCapsFitTheMessageLimit(t *testing.T) {
	assert.LessOrEqual(t, mcp.DefaultMaxResultBytes+(64<<10), transport.DefaultMaxMessageBytes)
	assert.LessOrEqual(t, int64(mcp.DefaultMaxResultBytes), int64(mcp.DefaultMaxResultBytes))
}

func head(s string) string { return s[:min(len(s), 512)] }
