package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

func connect(tb testing.TB) *mcp.Client {
	tb.Helper()
	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- newServer(slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx, serverEnd) }()
	c := mcp.NewClient(nil)
	require.NoError(tb, c.Connect(ctx, clientEnd))
	tb.Cleanup(func() {
		require.NoError(tb, c.Close())
		require.NoError(tb, <-done)
	})
	return c
}

func TestEcho(t *testing.T) {
	c := connect(t)
	ctx := context.Background()
	for _, msg := range []string{"hello", "", "ünïcødé ✓", "line\nbreak"} {
		res, err := c.CallTool(ctx, "echo", map[string]any{"message": msg})
		require.NoError(t, err)
		require.Len(t, res.Content, 1, "exactly one content block")
		require.Equal(t, mcp.ContentText, res.Content[0].Type)
		require.Equal(t, msg, res.Content[0].Text)
		require.Nil(t, res.StructuredContent)
	}
	_, err := c.CallTool(ctx, "echo", map[string]any{})
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se, "message is required")
	require.Equal(t, mcp.ErrInvalidArgument, se.Code)
}

// BenchmarkCallToolInMemory is one tools/call of echo through the Client,
// the in-memory transport, the Server and the standard middleware chain.
func BenchmarkCallToolInMemory(b *testing.B) {
	c := connect(b)
	ctx := context.Background()
	b.Run("seq", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			msg := "hello-" + strconv.Itoa(i)
			res, err := c.CallTool(ctx, "echo", map[string]any{"message": msg})
			if err != nil || res.Content[0].Text != msg {
				b.Fatalf("bad result %v %v", res, err)
			}
		}
	})
	b.Run("par", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				res, err := c.CallTool(ctx, "echo", map[string]any{"message": "hello"})
				if err != nil || res.Content[0].Text != "hello" {
					b.Errorf("bad result %v %v", res, err)
					return
				}
			}
		})
	})
}
