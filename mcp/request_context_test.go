package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// Detach and AfterHandler outside a Server: the functions wait for the
// last detached handler, run once, and at once when nothing is detached.
func TestDetachAfterHandler(t *testing.T) {
	t.Run("nothing detached: at once", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		ran := 0
		assert.False(t, call.Detached())
		call.AfterHandler(func() { ran++ })
		assert.Equal(t, 1, ran)
	})
	t.Run("waits for the last detached handler", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		var order []string
		end1 := call.Detach()
		end2 := call.Detach()
		assert.True(t, call.Detached())
		call.AfterHandler(func() { order = append(order, "a") })
		call.AfterHandler(func() { order = append(order, "b") })
		end1()
		end1() // a second end does nothing
		assert.Empty(t, order, "one handler still runs")
		assert.True(t, call.Detached())
		end2()
		assert.Equal(t, []string{"a", "b"}, order, "in the order given, once")
		assert.False(t, call.Detached())
		end2()
		assert.Equal(t, []string{"a", "b"}, order)
		call.AfterHandler(func() { order = append(order, "c") })
		assert.Equal(t, []string{"a", "b", "c"}, order, "after the end: at once")
	})
	t.Run("nil call", func(t *testing.T) {
		var call *mcp.ToolCall
		ran := false
		assert.False(t, call.Detached())
		call.AfterHandler(func() { ran = true })
		assert.True(t, ran)
	})
}

// A per-request session (Server.ServeRequest, the 2026-07-28 POST of
// streamable HTTP) ends its request with the caller's context; a deadline
// derived from the request's context ends with it too.
func TestRequestDeadlineEndsWithThePOST(t *testing.T) {
	ended := make(chan error, 1)
	started := make(chan struct{})
	opts := mcptest.ServerOptions(handlerTools{"wait": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		dctx, cancel := context.WithDeadline(ctx, time.Now().Add(time.Hour))
		defer cancel()
		close(started)
		select {
		case <-dctx.Done():
			ended <- dctx.Err()
		case <-time.After(10 * time.Second):
			ended <- errors.New("the deadline's context outlived the POST")
		}
		return nil, dctx.Err()
	}})
	srv := mcp.NewServer(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeRequest(ctx, nopTransport{}, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	}()
	<-started
	cancel() // the client went away
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not end")
	}
	require.NoError(t, <-done)
}

// nopTransport is a Transport whose writes go nowhere (ServeRequest is
// handed the message itself).
type nopTransport struct{}

func (nopTransport) Read(ctx context.Context) ([]byte, error) { <-ctx.Done(); return nil, ctx.Err() }
func (nopTransport) Write(context.Context, []byte) error      { return nil }
func (nopTransport) Close() error                             { return nil }
func (nopTransport) Kind() string                             { return "nop" }
