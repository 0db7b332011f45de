package middleware

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/mcp"
)

// Dispatch is the terminal Handler of every Chain: it runs the tool's own
// handler (registry.Tool.Invoke) with c.Args. It does not validate; put
// Validate before it. The handler's context carries the *mcp.ToolCall
// (mcp.ToolCallFromContext). A handler error that matches
// errors.ErrUnsupported (and carries no code of its own) becomes a
// NOT_IMPLEMENTED tool error: the tool exists, but what was asked of it is
// not available. The client is told errors.ErrUnsupported's own text, the
// error's whole text only with mcp.ServerOptions.ExposeErrorText (see
// mcp.ClientErrorText); the whole text goes to the log.
func Dispatch(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
	t, err := c.Tool()
	if err != nil {
		return nil, err
	}
	if mcp.ToolCallFromContext(ctx) != c.ToolCall {
		ctx = mcp.WithToolCall(ctx, c.ToolCall)
	}
	res, err := t.Invoke(ctx, c.ToolCall, c.Args)
	if err != nil && errors.Is(err, errors.ErrUnsupported) && !carriesCode(err) {
		msg := mcp.ClientErrorText(c.ToolCall, "tool "+quote(c.Name), err, errors.ErrUnsupported.Error(), errors.ErrUnsupported)
		return nil, c.toolError(mcp.ErrNotImplemented, msg, map[string]any{"tool": c.Name})
	}
	return res, err
}

// carriesCode reports whether err already says how to answer: a
// StructuredError or a JSON-RPC error.
func carriesCode(err error) bool {
	var se *mcp.StructuredError
	var pe *mcp.Error
	return errors.As(err, &se) || errors.As(err, &pe)
}

// Recover returns a stage that turns a panic in any stage inside it (or in
// the tool's handler) into an INTERNAL tool error with details
// {"reason": "panic"}. The panic value and stack are logged with the call's
// logger (each cut to 2 KiB), never sent to the client; the server lives on.
func Recover() Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (res *mcp.CallToolResult, err error) {
			defer func() {
				if v := recover(); v != nil {
					stack := debug.Stack()
					if hp, ok := v.(*handlerPanic); ok { // raised again by Timeout: the tool's stack first
						v, stack = hp.value, append(append(hp.stack, "\n[raised again on the caller's goroutine]\n"...), stack...)
					}
					c.Log().Error("middleware: panic while serving a tool call", "tool", c.Name, "panic", logclip.Clip(fmt.Sprint(v), logclip.DefaultMaxValue),
						"stack", logclip.Clip(string(stack), logclip.DefaultMaxValue))
					// The panic may come from any stage inside, not only the
					// tool: the message does not say which.
					res, err = nil, c.toolError(mcp.ErrInternal, "internal error while serving tool "+quote(c.Name)+" (a recovered panic; see the server's log)", map[string]any{"reason": "panic"})
				}
			}()
			return next(ctx, c)
		}
	}
}

// PayloadLimit returns a stage that rejects calls whose arguments are larger
// than maxBytes: the UTF-8 byte length of the arguments JSON as received
// ({} when absent). A larger payload gets a RESOURCE_EXHAUSTED tool error
// with details {"limit": "maxPayloadBytes", "maxPayloadBytes": maxBytes,
// "payloadBytes": n}, not retryable; a payload of exactly maxBytes passes.
// maxBytes <= 0 means no limit.
func PayloadLimit(maxBytes int) Middleware {
	return func(next Handler) Handler {
		if maxBytes <= 0 {
			return next
		}
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			if n := len(c.Args); n > maxBytes {
				se := c.toolError(mcp.ErrResourceExhausted,
					"arguments of "+strconv.Itoa(n)+" bytes exceed maxPayloadBytes ("+strconv.Itoa(maxBytes)+")", map[string]any{
						"limit": "maxPayloadBytes", "maxPayloadBytes": maxBytes, "payloadBytes": n,
					})
				se.Retryable = false // the same arguments would exceed it again
				return nil, se
			}
			return next(ctx, c)
		}
	}
}

// Lookup returns a stage that resolves the called tool (Call.Tool) and stops
// a call to an unknown tool with JSON-RPC -32602, its data a NOT_FOUND
// StructuredError. Stages after it can rely on Call.Tool succeeding.
func Lookup() Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			if _, err := c.Tool(); err != nil {
				return nil, err
			}
			return next(ctx, c)
		}
	}
}

// Validate returns a stage that checks c.Args against the tool's input
// schema (registry.Tool.ValidateArguments, compiled at registration). Invalid
// arguments stop the call with the INVALID_ARGUMENT StructuredError listing
// every violation; the handler does not run.
func Validate() Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			t, err := c.Tool()
			if err != nil {
				return nil, err
			}
			if se := t.ValidateArguments(c.Args); se != nil {
				c.fillIDs(se)
				return nil, se
			}
			c.validated = true
			return next(ctx, c)
		}
	}
}

// LockOptions choose which tools Lock serializes. Nil means the default.
type LockOptions struct {
	// All serializes every tool (one call per tool name at a time), as a
	// per-tool mutex stage does. By default only tools registered with
	// registry.ToolOptions.Serial are serialized; others pass straight on.
	All bool
}

// Lock returns a stage holding a per-tool mutex around the rest of the
// chain: calls of the same tool run one at a time, in arrival order; calls
// of different tools do not wait for each other. Which tools are locked is
// chosen by opts (nil = only tools registered with ToolOptions.Serial).
// A call waiting for the lock gives up when its context ends. The locks
// belong to the returned Middleware value: chains built with the same value
// share them.
func Lock(opts *LockOptions) Middleware {
	all := opts != nil && opts.All
	var locks sync.Map // tool name → chan struct{} (capacity 1)
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			t, err := c.Tool()
			if err != nil {
				return nil, err
			}
			if !all && !toolSerial(t) {
				return next(ctx, c)
			}
			v, ok := locks.Load(t.Name())
			if !ok {
				v, _ = locks.LoadOrStore(t.Name(), make(chan struct{}, 1))
			}
			mu := v.(chan struct{})
			select {
			case mu <- struct{}{}:
			default:
				select {
				case mu <- struct{}{}:
				case <-ctx.Done():
					return nil, contextError(c, ctx.Err(), "waiting for the tool lock")
				}
			}
			defer unlockAfter(c, mu)
			return next(ctx, c)
		}
	}
}

// contextError reports a call abandoned because its context ended: TIMEOUT
// for a deadline, INTERNAL (reason "cancelled") for a cancellation.
func contextError(c *Call, err error, while string) *mcp.StructuredError {
	if err == context.DeadlineExceeded {
		return c.toolError(mcp.ErrTimeout, "deadline exceeded "+while, map[string]any{"tool": c.Name})
	}
	return c.toolError(mcp.ErrInternal, "call cancelled "+while, map[string]any{"reason": "cancelled", "tool": c.Name})
}

// unlockAfter releases a tool's lock once the call's handler has really
// returned: now, or later when a Timeout inside returned first
// (mcp.ToolCall.AfterHandler).
func unlockAfter(c *Call, mu chan struct{}) {
	if c.Detached() {
		c.AfterHandler(func() { <-mu })
		return
	}
	<-mu
}
