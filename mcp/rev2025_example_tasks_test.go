//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// A tool that may run as a task (2025-11-25): the client gets the task at
// once, and collects the tool's result when it is ready. Status changes
// arrive as notifications.
func ExampleServerOptions_tasks() {
	type ReportIn struct {
		Year int `json:"year"`
	}
	reg := registry.New(nil)
	registry.MustRegister(reg, "build_report", "Builds the yearly report (slow).",
		func(ctx context.Context, in ReportIn) (string, error) {
			return fmt.Sprintf("report %d: 42 pages", in.Year), nil
		}, &registry.ToolOptions{TaskSupport: mcp.TaskOptional})
	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{
		Tools:  middleware.Standard(reg, nil),
		Tasks:  &mcp.TaskOptions{TTL: 10 * time.Minute}, // offers tasks to 2025-11-25 clients
		Logger: quiet,
	})

	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	go srv.Run(ctx, serverEnd)
	done := make(chan mcp.TaskStatus, 1)
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet, OnTaskStatus: func(p *mcp.TaskStatusNotificationParams) {
		done <- p.Status
	}})
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	defer c.Close()

	created, err := c.CallToolAsTask(ctx, "build_report", map[string]int{"year": 2025}, time.Hour)
	if err != nil {
		panic(err)
	}
	fmt.Println("task", created.Task.Status, "ttl", *created.Task.TTL, "ms")
	res, err := c.TaskResult(ctx, created.Task.TaskID) // blocks until the task is over
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].Text, "| related task found:", mcp.RelatedTaskID(res.Meta) == created.Task.TaskID)
	fmt.Println("notified:", <-done)
	// Output:
	// task working ttl 3600000 ms
	// report 2025: 42 pages | related task found: true
	// notified: completed
}

// Tasks are bounded by default; TaskOptions tightens the bounds. Here a
// result over MaxResultBytes is not stored: the task fails with an error
// naming the limit.
func ExampleTaskOptions_limits() {
	reg := registry.New(nil)
	registry.MustRegister(reg, "export", "Exports the whole table.",
		func(ctx context.Context, _ struct{}) (string, error) {
			return strings.Repeat("row\n", 1000), nil // about 4 KB
		}, &registry.ToolOptions{TaskSupport: mcp.TaskOptional})
	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{
		Tools: middleware.Standard(reg, nil),
		Tasks: &mcp.TaskOptions{
			MaxRunningPerOwner: 4,                // task handlers running at once per caller
			MaxRunTime:         10 * time.Minute, // then the task fails
			MaxFinishedTasks:   20,               // finished tasks kept per caller...
			MaxFinishedBytes:   1 << 20,          // ...and the bytes of their results
			MaxResultBytes:     1024,             // one result, as JSON
		},
		Logger: quiet,
	})

	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	go srv.Run(ctx, serverEnd)
	c := mcp.NewClient(&mcp.ClientOptions{Logger: quiet})
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	defer c.Close()

	created, err := c.CallToolAsTask(ctx, "export", nil, 0)
	if err != nil {
		panic(err)
	}
	_, err = c.TaskResult(ctx, created.Task.TaskID)
	var e *mcp.Error
	fmt.Println(errors.As(err, &e), e.Code, strings.Contains(e.Message, "TaskOptions.MaxResultBytes"))
	task, _ := c.GetTask(ctx, created.Task.TaskID)
	fmt.Println(task.Status)
	// Output:
	// true -32603 true
	// failed
}
