package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
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
	Arguments json.RawMessage
	// Meta is the request's _meta (nil when absent), without the
	// members of revision 2026-07-28 that the request's scope holds
	// (protocol version, client capabilities and info, log level: see
	// RequestFromContext).
	Meta Meta
	// Task is set when the client asked to run the call as a task
	// (2025-11-25), or when a 2026-07-28 call may become one (the tool
	// supports tasks and the request declared the tasks extension; see
	// StartTask). Middleware reads it to leave such calls without a
	// response deadline.
	Task *TaskMetadata
	// CorrelationID is the client's _meta.correlationId or a new UUID v4.
	CorrelationID string
	// RunID identifies this invocation.
	RunID string
	// Logger carries correlationId and runId on every record.
	Logger *slog.Logger
	// Session is the connection the call arrived on (nil outside a Server).
	Session *Session

	// respond sends the response before CallTool returns; nil outside a Server.
	respond       func(*CallToolResult, error) bool
	responded     atomic.Bool      // the answer-once gate of a task's run (gate is nil)
	gate          *atomic.Bool     // the gate of the request the call answers, if any
	earlyResponse atomic.Bool      // respondEarly sent the response
	progress      Progress         // see ProgressFromContext (progress_helper.go)
	task          *taskEntry       // the task the call runs as (server_tasks.go)
	run           *modernRun       // a 2026-07-28 call that may become a task (tasks_modern.go)
	deadline      ResponseDeadline // the first deadline armed (WithResponseDeadline), never reused
	logh          callHandler      // Logger's handler, and the Logger itself (no allocation of their own)
	logv          slog.Logger
}

// respondEarly sends res (or err) as the response to this call at once,
// before CallTool returns, through the answer-once gate of the call's
// request, and reports whether it was the first response. The Server then
// drops whatever CallTool returns later, logging it as late. Only the
// response deadline (WithResponseDeadline) answers early. Outside a Server (no
// transport to answer on) it returns false and leaves the gate closed.
func (c *ToolCall) respondEarly(res *CallToolResult, err error) bool {
	if c.respond == nil || !c.answered().CompareAndSwap(false, true) {
		return false
	}
	c.earlyResponse.Store(true)
	return c.respond(res, err)
}

// answered is the call's answer-once gate: its request's, or its own.
func (c *ToolCall) answered() *atomic.Bool {
	if c.gate != nil {
		return c.gate
	}
	return &c.responded
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
