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
	"github.com/keelmcp/keel/transport"
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

// Under a Server, a handler that answers before its work ends (Detach)
// keeps its session's graceful shutdown waiting, runs the AfterHandler
// functions when its work ends, and can no longer report progress on the
// request it answered.
func TestDetachedHandlerUnderAServer(t *testing.T) {
	release := make(chan struct{})
	after := make(chan struct{})
	progress := make(chan error, 2)
	opts := mcptest.ServerOptions(handlerTools{"bg": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		progress <- mcp.ReportProgress(ctx, 1, 0, "")
		end := call.Detach()
		go func() { // the work goes on after the answer
			<-release
			progress <- mcp.ReportProgress(ctx, 2, 0, "")
			end()
		}()
		call.AfterHandler(func() { close(after) })
		return mcp.TextResult("early"), nil
	}})
	opts.ShutdownTimeout = 10 * time.Second
	srv := mcp.NewServer(opts)
	ct, st := transport.NewPipe(nil)
	runDone := make(chan error, 1)
	go func() { runDone <- srv.Run(context.Background(), st) }()
	c := mcp.NewClient(quietClient)
	require.NoError(t, c.Connect(t.Context(), ct))

	res, err := c.CallToolWithParams(t.Context(), &mcp.CallToolParams{Name: "bg", Meta: mcp.Meta{mcp.MetaProgressToken: 1}})
	require.NoError(t, err)
	assert.Equal(t, "early", textOf(t, res))
	require.NoError(t, <-progress)
	select {
	case <-after:
		t.Fatal("AfterHandler ran while the detached work runs")
	default:
	}
	require.NoError(t, c.Close()) // the input ends: the session drains
	select {
	case err := <-runDone:
		t.Fatalf("Run returned (%v) while a detached handler runs", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.ErrorIs(t, <-progress, mcp.ErrRequestCompleted)
	<-after
	select {
	case err := <-runDone:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once the detached handler ended")
	}
}
