//go:build !keel_omit2025

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
