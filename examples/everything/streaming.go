package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/keelmcp/keel/transport/streamhttp"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Tools that send the client messages while they run. Over streamable
// HTTP these travel on the SSE stream of the call's POST (the response
// switches from JSON to SSE as soon as the first one is sent).

// step is the pause between the messages of the streaming tools.
const step = 50 * time.Millisecond

// withLogging sends three log messages (notifications/message) through
// mcp.ClientLogger: a slog.Logger whose records go to the client, named
// after the tool and carrying the call's correlationId and runId. Records
// below the level the client chose (logging/setLevel) are not sent.
func withLogging(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
	log := mcp.ClientLogger(ctx)
	log.Info("Tool execution started")
	if err := sleep(ctx, step); err != nil {
		return nil, err
	}
	log.Info("Tool processing data")
	if err := sleep(ctx, step); err != nil {
		return nil, err
	}
	log.Info("Tool execution completed")
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("Tool with logging executed successfully")}}, nil
}

// withProgress reports progress 0, 50 and 100 of 100 with mcp.ReportProgress,
// which sends notifications/progress only when the client asked for it
// (a progressToken in the request's _meta).
func withProgress(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := sleep(ctx, step); err != nil {
				return nil, err
			}
		}
		if err := mcp.ReportProgress(ctx, p, 100, fmt.Sprintf("step %d of 3", i+1)); err != nil {
			return nil, err
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("Tool with progress executed successfully")}}, nil
}

// reconnection closes the SSE stream of its own call before answering
// (SSE polling, 2025-11-25): the client reconnects with GET and
// Last-Event-ID after the retry interval, and receives the response from
// the session's event store. Where the stream cannot be resumed (stdio, a
// stateless server, an older revision) the tool simply answers.
func reconnection(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
	if err := streamhttp.CloseSSEStream(ctx); err != nil && !errors.Is(err, streamhttp.ErrNotResumable) {
		return nil, err
	}
	if err := sleep(ctx, 2*step); err != nil { // the response is sent while the client is away
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text(
		"Reconnection test completed successfully: the response reached the client after it reconnected.")}}, nil
}

// sleep waits for d, or until ctx ends (the call was cancelled or timed out).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
