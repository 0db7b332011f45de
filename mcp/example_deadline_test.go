//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// A tool source answers a call at its response deadline, even when the
// handler is still running: WithResponseDeadline derives the handler's
// context (it ends at the deadline) and answers through the request's
// answer-once gate. The handler's late result is dropped. middleware.Timeout
// is the standard chain's stage built on it.
func ExampleToolCall_WithResponseDeadline() {
	returned := make(chan error, 1)
	slow := handlerTools{"slow": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		dctx, dl := call.WithResponseDeadline(ctx, time.Now().Add(50*time.Millisecond), func() error {
			return &mcp.StructuredError{Code: mcp.ErrTimeout, Message: "slow did not finish in 50ms"}
		})
		<-dctx.Done()                     // the handler sees the deadline...
		time.Sleep(20 * time.Millisecond) // ...and takes a while to stop
		returned <- dctx.Err()
		if dl.Disarm(dctx.Err()) {
			return nil, errors.New("dropped: the deadline answered")
		}
		return mcp.TextResult("finished"), nil
	}}
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: slow, Logger: slog.New(slog.DiscardHandler)})
	c := connectExample(srv, nil)
	defer c.Close()

	_, err := c.CallTool(context.Background(), "slow", nil)
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		fmt.Println(se.Code, se.Message)
	}
	fmt.Println("the handler's context:", <-returned)
	// Output:
	// TIMEOUT slow did not finish in 50ms
	// the handler's context: context deadline exceeded
}
