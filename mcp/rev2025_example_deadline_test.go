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

// A tool source that answers a call at its deadline while the handler
// runs on, as net/http's TimeoutHandler does (middleware.Timeout is the
// standard chain's stage built this way): it runs the handler on a
// goroutine, returns TIMEOUT through the chain when the deadline passes,
// and marks the call detached (Detach) so that what is released when the
// handler really ends (AfterHandler) waits for it.
func ExampleToolCall_Detach() {
	work := func(ctx context.Context) (*mcp.CallToolResult, error) {
		<-ctx.Done()                      // the handler sees the deadline...
		time.Sleep(20 * time.Millisecond) // ...and takes a while to stop
		return mcp.TextResult("finished"), nil
	}
	released := make(chan struct{})
	slow := handlerTools{"slow": func(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		end := call.Detach() // from here on, the handler may outlive this function
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			defer end()
			res, _ := work(dctx)
			done <- res
		}()
		call.AfterHandler(func() { close(released) }) // a slot, a lock, an audit record...
		select {
		case res := <-done:
			return res, nil
		case <-dctx.Done():
			return nil, &mcp.StructuredError{Code: mcp.ErrTimeout, Message: "slow did not finish in 50ms"}
		}
	}}
	srv := mcp.NewServer(&mcp.ServerOptions{Tools: slow, Logger: slog.New(slog.DiscardHandler)})
	c := connectExample(srv, nil)
	defer c.Close()

	_, err := c.CallTool(context.Background(), "slow", nil)
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		fmt.Println(se.Code, se.Message)
	}
	<-released
	fmt.Println("released once the handler returned")
	// Output:
	// TIMEOUT slow did not finish in 50ms
	// released once the handler returned
}
