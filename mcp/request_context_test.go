package mcp_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// A request's context is keel's own: it answers RequestFromContext and
// ToolCallFromContext, keeps its parent's values, and contexts derived
// from it with package context end with it — at once, and without a
// goroutine each.
func TestRequestContextBehavesAsAContext(t *testing.T) {
	type key struct{}
	seen := make(chan error, 1)
	release := make(chan struct{})
	opts := mcptest.ServerOptions(handlerTools{
		"look": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
			switch {
			case mcp.ToolCallFromContext(ctx) != call:
				return nil, errors.New("ToolCallFromContext is not the call")
			case mcp.RequestFromContext(ctx) == nil || mcp.RequestFromContext(ctx).Method != "tools/call":
				return nil, errors.New("RequestFromContext is not the request")
			case ctx.Err() != nil:
				return nil, errors.New("a live request's context has ended")
			}
			if _, ok := ctx.Deadline(); ok {
				return nil, errors.New("a deadline nobody set")
			}
			before := runtime.NumGoroutine()
			children := make([]context.Context, 50)
			for i := range children {
				var cancel context.CancelFunc
				children[i], cancel = context.WithCancel(context.WithValue(ctx, key{}, i))
				defer cancel()
			}
			if n := runtime.NumGoroutine(); n > before+2 {
				return nil, errors.New("deriving contexts started goroutines")
			}
			go func() {
				<-release
				seen <- nil
			}()
			return mcp.TextResult("ok"), nil
		},
		"wait": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			<-ctx.Done()
			// The child ends with its parent (package context closes the
			// parent's Done before it cancels the children).
			select {
			case <-child.Done():
				seen <- child.Err()
			case <-time.After(5 * time.Second):
				seen <- errors.New("the derived context outlived the request's")
			}
			return nil, ctx.Err()
		},
	})
	c, _ := connect(t, opts, quietClient)
	res, err := c.CallTool(context.Background(), "look", nil)
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	close(release)
	require.NoError(t, <-seen)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "wait", nil)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel() // notifications/cancelled: the request's context ends
	select {
	case err := <-seen:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the request's context did not end on cancellation")
	}
	assert.ErrorIs(t, <-done, context.Canceled)
}

// The end of the session ends the contexts of the requests still in
// flight (the session's table watches its context).
func TestRequestContextEndsWithTheSession(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	opts := mcptest.ServerOptions(handlerTools{"wait": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(10 * time.Second):
			ended <- errors.New("still running")
		}
		return nil, ctx.Err()
	}})
	c, closeServer := connect(t, opts, quietClient)
	go func() { _, _ = c.CallTool(context.Background(), "wait", nil) }()
	<-started
	_ = closeServer()
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context outlived its session")
	}
}

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

// Under a Server, a deadline that passes answers the call at once, with
// what answer returns, while the handler still runs; its own result is
// dropped as late.
func TestResponseDeadlineAnswersEarly(t *testing.T) {
	handlerDone := make(chan error, 1)
	opts := mcptest.ServerOptions(handlerTools{"slow": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		dctx, dl := call.WithResponseDeadline(ctx, time.Now().Add(30*time.Millisecond), func() error {
			return &mcp.StructuredError{Code: mcp.ErrTimeout, Message: "too slow"}
		})
		<-dctx.Done()
		time.Sleep(100 * time.Millisecond) // the answer has gone out meanwhile
		handlerDone <- dctx.Err()
		if !dl.Disarm(dctx.Err()) {
			return nil, errors.New("Disarm says the deadline did not answer")
		}
		return mcp.TextResult("late"), nil
	}})
	c, _ := connect(t, opts, quietClient)
	start := time.Now()
	res, err := c.CallTool(context.Background(), "slow", nil)
	assert.Less(t, time.Since(start), 100*time.Millisecond, "answered before the handler returned")
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, mcp.ErrTimeout, se.Code)
	assert.Equal(t, "too slow", se.Message)
	require.True(t, res.IsError)
	assert.ErrorIs(t, <-handlerDone, context.DeadlineExceeded)
	require.NoError(t, c.Ping(context.Background()))
}

// A cancellation that races the arming of a response deadline (the
// client cancels as the standard chain's Timeout stage arms it) ends the
// handler's context, and -race sees no unsynchronized access.
func TestResponseDeadlineRacesCancellation(t *testing.T) {
	opts := mcptest.ServerOptions(handlerTools{"arm": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		dctx, dl := call.WithResponseDeadline(ctx, time.Now().Add(time.Hour), func() error { return errors.New("late") })
		select {
		case <-dctx.Done():
		case <-time.After(5 * time.Second):
			return nil, errors.New("the deadline's context outlived the cancelled request")
		}
		dl.Disarm(dctx.Err())
		return nil, dctx.Err()
	}})
	c, _ := connect(t, opts, quietClient)
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, "arm", nil)
			done <- err
		}()
		time.Sleep(time.Duration(i%5) * 100 * time.Microsecond)
		cancel()
		select {
		case err := <-done:
			require.Error(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a cancelled call did not end")
		}
	}
	require.NoError(t, c.Ping(context.Background()))
}
