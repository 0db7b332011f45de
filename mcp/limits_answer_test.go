package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
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

// A batch over MaxBatch is answered at once with -32600 naming MaxBatch,
// on every transport (over HTTP, the POST that carried it gets the
// answer), and its ids are free for the next requests.
func TestBatchOverMaxBatchAnsweredEverywhere(t *testing.T) {
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), MaxBatch: 4})
	for name, ex := range exchanges(t, srv, mcp.Version20250326) {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("[")
			for i := range 5 {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"ping"}`)
			}
			b.WriteString("]")
			start := time.Now()
			var m struct {
				ID    any `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Data    struct {
						Limit string `json:"limit"`
						Max   int    `json:"max"`
					} `json:"data"`
				} `json:"error"`
			}
			out := ex(t, b.String())
			require.NoError(t, jsonv2.Unmarshal([]byte(out), &m), out)
			assert.Less(t, time.Since(start), 2*time.Second)
			assert.Nil(t, m.ID)
			assert.Equal(t, -32600, m.Error.Code)
			assert.Contains(t, m.Error.Message, "MaxBatch")
			assert.Equal(t, "MaxBatch", m.Error.Data.Limit)
			assert.Equal(t, 4, m.Error.Data.Max)
			// The ids are free: the same ones are served again.
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, ex(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			assert.Contains(t, ex(t, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]`), `"id":5`)
		})
	}
}

// A result larger than the transport's MaxMessageBytes is never sent
// (the peer would discard it and wait): the request is answered with
// -32603 naming MaxMessageBytes, on every transport, promptly; keel's
// Client reports it.
func TestResponseOverMessageLimitAnsweredEverywhere(t *testing.T) {
	reg := registry.New(nil)
	size := transport.DefaultMaxMessageBytes + 1024
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "big", InputSchema: []byte(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			return mcp.TextResult(strings.Repeat("x", size)), nil
		}, nil))
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Logger: slog.New(slog.DiscardHandler)})
	for name, ex := range exchanges(t, srv, mcp.Version20251125) {
		t.Run(name, func(t *testing.T) {
			out := ex(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"big"}}`)
			var m struct {
				ID    int `json:"id"`
				Error struct {
					Code    int                 `json:"code"`
					Message string              `json:"message"`
					Data    mcp.StructuredError `json:"data"`
				} `json:"error"`
			}
			require.NoError(t, jsonv2.Unmarshal([]byte(out), &m), out)
			assert.Equal(t, 7, m.ID)
			assert.Equal(t, -32603, m.Error.Code)
			assert.Contains(t, m.Error.Message, "MaxMessageBytes")
			assert.Equal(t, mcp.ErrResourceExhausted, m.Error.Data.Code)
			assert.Equal(t, "MaxMessageBytes", m.Error.Data.Details["limit"])
			assert.NotEmpty(t, m.Error.Data.CorrelationID)
			assert.False(t, m.Error.Data.Retryable, "the same call would produce the same result")
		})
	}
	t.Run("client", func(t *testing.T) {
		ct, st := transport.NewPipe(nil)
		go func() { _ = srv.Run(context.Background(), st) }()
		c := mcp.NewClient(&mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, c.Connect(ctx, ct))
		defer c.Close()
		_, err := c.CallTool(ctx, "big", nil)
		var e *mcp.Error
		require.ErrorAs(t, err, &e, "an answer, not the deadline")
		assert.Contains(t, e.Message, "MaxMessageBytes")
	})
}

// The result caps agree with the message limit: a result at the default
// cap, with its envelope, fits in a message.
func TestDefaultResultCapsFitTheMessageLimit(t *testing.T) {
	assert.LessOrEqual(t, mcp.DefaultMaxResultBytes+(64<<10), transport.DefaultMaxMessageBytes)
	assert.LessOrEqual(t, int64(mcp.DefaultMaxResultBytes), int64(mcp.DefaultMaxResultBytes))
}

// A batch whose answers together pass MaxMessageBytes (each fits alone)
// is answered with the error naming the limit for each of its requests,
// on every transport.
func TestBatchAnswerOverMessageLimitAnsweredEverywhere(t *testing.T) {
	reg := registry.New(nil)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "half", InputSchema: []byte(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			return mcp.TextResult(strings.Repeat("h", transport.DefaultMaxMessageBytes/2+1024)), nil
		}, nil))
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: reg, Logger: slog.New(slog.DiscardHandler)})
	for name, ex := range exchanges(t, srv, mcp.Version20250326) {
		t.Run(name, func(t *testing.T) {
			out := ex(t, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"half"}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"half"}}]`)
			var answers []struct {
				ID    int `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, jsonv2.Unmarshal([]byte(out), &answers), head(out))
			require.Len(t, answers, 2)
			for i, a := range answers {
				assert.Equal(t, i+1, a.ID)
				assert.Equal(t, -32603, a.Error.Code)
				assert.Contains(t, a.Error.Message, "MaxMessageBytes")
			}
		})
	}
}

func head(s string) string { return s[:min(len(s), 512)] }
