package middleware

import (
	"errors"
	"sync/atomic"

	"github.com/keelmcp/keel/mcp"
)

// exhausted counts consecutive tools/call completions that were rejected
// with RESOURCE_EXHAUSTED, process-wide; the first other completion resets
// it.
var exhausted atomic.Int64

// ResourceExhaustedCount returns the process-wide count of consecutive
// tools/call rejections with RESOURCE_EXHAUSTED: every Chain adds one for
// each call that ends with a RESOURCE_EXHAUSTED error and resets it to zero
// on the first call that ends any other way (success or another tool error).
// JSON-RPC errors (such as an unknown tool) neither count nor reset. The
// health tool reports it and turns unhealthy at 3.
func ResourceExhaustedCount() int64 { return exhausted.Load() }

// RecordToolCallCompletion updates the RESOURCE_EXHAUSTED counter for one
// finished tools/call that ended with err (nil for a result). Chain.CallTool
// calls it; a ToolSource that does not run through a Chain can call it too.
func RecordToolCallCompletion(err error) { recordCompletion(err) }

func recordCompletion(err error) {
	if err != nil {
		se, ok := err.(*mcp.StructuredError)
		if !ok {
			var pe *mcp.Error
			if errors.As(err, &pe) { // protocol error: not a tool completion
				return
			}
			errors.As(err, &se)
		}
		if se != nil && se.Code == mcp.ErrResourceExhausted {
			exhausted.Add(1)
			return
		}
	}
	if exhausted.Load() != 0 { // avoid writing a shared cache line on every call
		exhausted.Store(0)
	}
}
