package middleware

import (
	"context"
	"errors"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// Timeout returns the response-deadline stage.
// Each call gets a deadline: the tool's registry.ToolOptions.Timeout when
// set, otherwise def (def <= 0 and no per-tool value: no deadline). When the
// deadline passes:
//
//   - the context of the stages inside (and of the tool's handler) is
//     cancelled with context.DeadlineExceeded;
//   - a TIMEOUT tool error is answered at once through
//     mcp.ToolCall.WithResponseDeadline, while the handler may still be
//     running;
//   - the stage itself keeps waiting until the handler returns, so stages
//     outside it (the Limiter's slot, Lock, AuditExit) are released only
//     then; it then returns the TIMEOUT error too, which the Server drops as
//     a late result, and logs the late completion.
//
// Outside a Server (there is no request to answer early) the TIMEOUT error
// is simply returned when the handler returns. A handler that finishes at
// the very edge, before the early answer went out, keeps its own result.
//
// The stage is a plain wrapper: it takes the handler's context from the
// owner of the request's life (mcp.ToolCall.WithResponseDeadline), which
// answers exactly once whatever races the deadline. No goroutine is
// started per call: timers drive the deadline.
//
// A call the Server runs as a task (mcp.ToolCall.Task set, 2025-11-25) has
// no response waiting for it: def does not apply, its task's ttl and
// tasks/cancel bound it. A per-tool Timeout still does; when it passes, the
// task fails with TIMEOUT.
func Timeout(def time.Duration) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			d := def
			if c.Task != nil {
				d = 0 // a task: see above
			}
			if t, err := c.Tool(); err == nil {
				if o := toolTimeout(t); o > 0 {
					d = o
				}
			}
			if d <= 0 {
				return next(ctx, c)
			}
			at := time.Now().Add(d)
			dctx, dl := c.WithResponseDeadline(ctx, at, func() error { return timeoutError(c, d) })
			returned := false
			defer func() {
				if !returned {
					dl.Disarm(nil) // next panicked: the deadline ends with it
				}
			}()
			res, err := next(dctx, c)
			returned = true
			if !dl.Disarm(err) {
				return res, err
			}
			c.timedOut = true
			c.lateRes, c.lateErr = res, err
			args := []any{"tool", c.Name, "timeout", d, "overrun", time.Since(at)}
			if err != nil {
				args = append(args, "error", err)
			} else if res != nil {
				args = append(args, "isError", res.IsError)
			}
			c.Log().Warn("middleware: tool returned after its deadline; its result is not sent", args...)
			return nil, timeoutError(c, d)
		}
	}
}

func timeoutError(c *Call, d time.Duration) *mcp.StructuredError {
	return c.toolError(mcp.ErrTimeout, "tool "+quote(c.Name)+" did not finish within "+d.String(),
		map[string]any{"tool": c.Name, "timeoutMs": d.Milliseconds()})
}

func isContextError(err error) bool {
	return err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
}
