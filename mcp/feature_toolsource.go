package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
)

// ToolSource is what a Server serves tools from. registry.Registry satisfies
// it with plain dispatch; middleware.Chain wraps any ToolSource's tools in
// the audited call chain.
type ToolSource interface {
	// ListTools returns every tool the session may see, sorted by name.
	// The Server paginates the slice and never modifies it.
	ListTools(ctx context.Context) ([]*Tool, error)
	// CallTool runs one tools/call. A *StructuredError (or an error
	// wrapping one) becomes an isError result; an *Error becomes a
	// JSON-RPC error response; any other error becomes an INTERNAL isError
	// result.
	CallTool(ctx context.Context, call *ToolCall) (*CallToolResult, error)
}

// ToolCall is one tools/call as the Server hands it to a ToolSource. The
// _meta member never reaches Arguments.
type ToolCall struct {
	Name string
	// Arguments is the raw arguments object ({} when the client sent none).
	// Its bytes may be shared with middleware: read them, never write
	// into them.
	Arguments json.RawMessage
	// Meta is the request's _meta (nil when absent), without the
	// members of revision 2026-07-28 that the request's scope holds
	// (protocol version, client capabilities and info, log level: see
	// RequestFromContext). The map is the call's own, but the values
	// nested in it may be shared with middleware: don't write into them.
	Meta Meta
	// Task is set when the client asked to run the call as a task
	// (2025-11-25), or when a 2026-07-28 call may become one (the tool
	// supports tasks and the request declared the tasks extension; see
	// StartTask). Middleware reads it to leave such calls without the
	// default deadline.
	Task *TaskMetadata
	// CorrelationID is the client's _meta.correlationId or a new UUID v4.
	CorrelationID string
	// RunID identifies this invocation.
	RunID string
	// Logger carries correlationId and runId on every record.
	Logger *slog.Logger
	// Session is the connection the call arrived on (nil outside a Server).
	Session *Session

	progress Progress    // see ProgressFromContext (feature_progress.go)
	task     *taskEntry  // the task the call runs as (task_server.go)
	run      *modernRun  // a 2026-07-28 call that may become a task (rev2026_tasks.go)
	logh     callHandler // Logger's handler, and the Logger itself (no allocation of their own)
	logv     slog.Logger

	// The handler's end (Detach, AfterHandler).
	endMu    sync.Mutex
	detached int      // handlers running on after their caller returned
	hooks    []func() // AfterHandler's, waiting for them
}

// Detach tells the call that its handler runs on after the caller of the
// handler has returned: a stage answered at a deadline and left the
// handler's goroutine running, as middleware.Timeout does. Call end once
// that handler has really returned; calls of end after the first do
// nothing. Until then the functions given to AfterHandler wait (a panic
// in one is logged with its stack, and the others still run). The
// request is answered at once; the handler still counts: a graceful
// shutdown of a connection (Server.Run) waits for it, and so does
// Server.StopTasks, for a 2026-07-28 request served by ServeRequest and
// for a task's handler.
func (c *ToolCall) Detach() (end func()) {
	c.endMu.Lock()
	c.detached++
	c.endMu.Unlock()
	var release func()
	if c.Session != nil && c.task == nil && c.run == nil {
		release = holdDetached(c.Session)
	}
	var ended atomic.Bool
	return func() {
		if !ended.CompareAndSwap(false, true) {
			return
		}
		c.endMu.Lock()
		c.detached--
		var run []func()
		if c.detached == 0 {
			run, c.hooks = c.hooks, nil
		}
		c.endMu.Unlock()
		log := c.Logger
		if log == nil {
			log = slog.Default()
		}
		for _, fn := range run {
			// On the handler's goroutine, outside any stage's recover:
			// a panic must not end the process, nor skip the releases
			// of the hooks after it.
			_, _ = guard(log, "AfterHandler function", c.Name, func() (any, error) { fn(); return nil, nil })
		}
		if release != nil {
			release()
		}
	}
}

// AfterHandler runs fn once the call's handler has really returned: at
// once when no handler of the call runs detached (see Detach), else when
// the last one returns, on its goroutine. Stages release what the handler
// holds (a concurrency slot, a lock) and report its end (an audit record)
// this way, so that a deadline that answered first never frees them while
// the handler still runs.
func (c *ToolCall) AfterHandler(fn func()) {
	if c == nil {
		fn()
		return
	}
	c.endMu.Lock()
	if c.detached > 0 {
		c.hooks = append(c.hooks, fn)
		c.endMu.Unlock()
		return
	}
	c.endMu.Unlock()
	fn()
}

// Detached reports whether a handler of the call runs on after its
// caller returned (see Detach). A stage that holds something for the
// handler releases it at once when Detached is false once the stages
// inside have returned, and through AfterHandler otherwise; this saves
// the function value AfterHandler would keep.
func (c *ToolCall) Detached() bool {
	if c == nil {
		return false
	}
	c.endMu.Lock()
	defer c.endMu.Unlock()
	return c.detached > 0
}

type toolCallKey struct{}

// WithToolCall returns a context carrying call; handlers find it with
// ToolCallFromContext.
func WithToolCall(ctx context.Context, call *ToolCall) context.Context {
	return context.WithValue(ctx, toolCallKey{}, call)
}

// ToolCallFromContext returns the tools/call being served, or nil.
func ToolCallFromContext(ctx context.Context) *ToolCall {
	c, _ := ctx.Value(toolCallKey{}).(*ToolCall)
	return c
}
