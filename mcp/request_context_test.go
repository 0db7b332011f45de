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

// A response deadline outside a Server (nothing is answered early there;
// Disarm tells what happened).
func TestResponseDeadline(t *testing.T) {
	answer := func() error { return errors.New("too late") }
	t.Run("passes while the handler runs", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		at := time.Now().Add(20 * time.Millisecond)
		ctx, dl := call.WithResponseDeadline(context.Background(), at, answer)
		d, ok := ctx.Deadline()
		require.True(t, ok)
		assert.Equal(t, at, d)
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		<-child.Done()
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, child.Err(), context.DeadlineExceeded)
		assert.False(t, time.Now().Before(at))
		assert.True(t, dl.Disarm(child.Err()))
		assert.True(t, dl.Disarm(nil), "a second Disarm reports the same")
	})
	t.Run("disarmed before it passes", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		ctx, dl := call.WithResponseDeadline(context.Background(), time.Now().Add(time.Hour), answer)
		assert.NoError(t, ctx.Err())
		assert.False(t, dl.Disarm(nil))
		assert.ErrorIs(t, ctx.Err(), context.Canceled, "the handler's context ends with Disarm")
		assert.False(t, dl.Disarm(nil), "a second Disarm reports the same")
	})
	t.Run("the caller goes away first", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		parent, cancel := context.WithCancel(context.Background())
		ctx, dl := call.WithResponseDeadline(parent, time.Now().Add(time.Hour), answer)
		cancel()
		<-ctx.Done()
		assert.ErrorIs(t, ctx.Err(), context.Canceled)
		assert.False(t, dl.Disarm(context.Canceled), "a caller that went away is answered nothing")
	})
	t.Run("nested: the outer one passes first", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		outer, odl := call.WithResponseDeadline(context.Background(), time.Now().Add(20*time.Millisecond), answer)
		inner, idl := call.WithResponseDeadline(outer, time.Now().Add(time.Hour), answer)
		<-inner.Done()
		assert.ErrorIs(t, inner.Err(), context.DeadlineExceeded)
		assert.False(t, idl.Disarm(inner.Err()), "the inner deadline did not pass")
		assert.True(t, odl.Disarm(inner.Err()))
	})
	t.Run("an earlier deadline of the caller governs", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		parent, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		at := time.Now().Add(30 * time.Millisecond)
		ctx, dl := call.WithResponseDeadline(parent, at, answer)
		<-ctx.Done()
		time.Sleep(time.Until(at) + 10*time.Millisecond) // the deadline passes while the handler runs on
		assert.False(t, dl.Disarm(ctx.Err()), "the caller's own deadline ended the context: this deadline answers nothing")
	})
	t.Run("a result at the very edge is kept", func(t *testing.T) {
		call := &mcp.ToolCall{Name: "x"}
		ctx, dl := call.WithResponseDeadline(context.Background(), time.Now().Add(10*time.Millisecond), answer)
		<-ctx.Done()
		// The handler returns its own result (no error) as the deadline
		// passes; unless the answer went out already, it is kept.
		if dl.Disarm(nil) {
			t.Log("the deadline's answer went out first")
		}
	})
}

// A per-request session (Server.ServeRequest, the 2026-07-28 POST of
// streamable HTTP) ends its request with the caller's context; a response
// deadline derived from the request's context ends with it too.
func TestResponseDeadlineEndsWithThePOST(t *testing.T) {
	ended := make(chan error, 1)
	started := make(chan struct{})
	opts := mcptest.ServerOptions(handlerTools{"wait": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		dctx, dl := call.WithResponseDeadline(ctx, time.Now().Add(time.Hour), func() error { return errors.New("late") })
		close(started)
		select {
		case <-dctx.Done():
			ended <- dctx.Err()
		case <-time.After(10 * time.Second):
			ended <- errors.New("the deadline's context outlived the POST")
		}
		dl.Disarm(dctx.Err())
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
