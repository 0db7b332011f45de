//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
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
)

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
