package middleware

import (
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Call is one tools/call on its way through a Chain. It embeds the
// *mcp.ToolCall the Server handed over (Name, Arguments, CorrelationID,
// RunID, Logger, Detach, AfterHandler, ...) and adds what the stages
// learn about it: the resolved tool and the arguments the handler will
// receive.
//
// A Call belongs to the goroutine serving it: its methods and fields must not
// be used concurrently (a handler that starts goroutines should copy what they
// need first). Timeout hands the Call on: the stages inside it and the handler
// run on another goroutine while the caller waits, and, once the deadline has
// answered, run on while the stages outside return. What those share is
// synchronized: TimedOut, the embedded ToolCall's Detach, Detached and
// AfterHandler, and the late outcome the audit record carries (of nested
// Timeout stages, the innermost one's: what the handler returned), read
// through AfterHandler. Everything else a stage outside Timeout may read but must not
// change while Detached reports true.
type Call struct {
	*mcp.ToolCall

	// Args are the arguments the tool's handler receives. They start as
	// ToolCall.Arguments; a stage may replace them (for example to fill in
	// defaults) before Validate and Dispatch see them.
	Args json.RawMessage

	reg       *registry.Registry
	tool      *registry.Tool
	toolErr   error
	resolved  bool
	validated bool

	enteredAt time.Time // set by AuditEnter; the start of the audit pair

	// Set by Timeout or Deadline when the call's deadline passed.
	timedOut atomic.Bool
	// timeoutDepth: the Timeout and Deadline stages the call has entered,
	// counted as each starts the handler (a stage inside another has the
	// greater depth).
	timeoutDepth int32
	// The late outcome: what the handler really returned after a deadline
	// (see setLate), read through AfterHandler.
	lateMu    sync.Mutex
	lateDepth int32
	lateRes   *mcp.CallToolResult
	lateErr   error

	// dc is the handler context of the first Deadline stage that gives
	// the call a deadline of its own (runUnderDeadline), allocated with
	// the call; dcUsed: it is taken (atomic: a stage outside may call next
	// again while an earlier run goes on, and then takes a fresh one).
	dc     deadlineContext
	dcUsed atomic.Bool
}

// setLate records what the stages inside the Timeout stage of depth
// returned after its deadline had passed. Of nested Timeout stages that
// each saw a late outcome, the innermost one's is kept: the handler's own,
// where a stage outside saw only the inner stage's TIMEOUT.
func (c *Call) setLate(depth int32, res *mcp.CallToolResult, err error) {
	c.lateMu.Lock()
	if depth > c.lateDepth {
		c.lateDepth, c.lateRes, c.lateErr = depth, res, err
	}
	c.lateMu.Unlock()
}

// late returns the late outcome (see setLate).
func (c *Call) late() (*mcp.CallToolResult, error) {
	c.lateMu.Lock()
	defer c.lateMu.Unlock()
	return c.lateRes, c.lateErr
}

// NewCall returns a Call for tc whose tool is looked up in reg. Chain.CallTool
// does this for every tools/call; use it to run a Handler directly, in tests
// or in a ToolSource of your own.
func NewCall(reg *registry.Registry, tc *mcp.ToolCall) *Call {
	return &Call{ToolCall: tc, Args: tc.Arguments, reg: reg}
}

// Tool resolves the called tool in the registry, once: later calls return the
// memoized answer. For an unknown tool the error is the JSON-RPC -32602
// *mcp.Error whose Data is a NOT_FOUND *mcp.StructuredError, so any stage can
// resolve the tool and return the error unchanged.
func (c *Call) Tool() (*registry.Tool, error) {
	if !c.resolved {
		c.resolved = true
		if c.reg != nil {
			c.tool, _ = c.reg.Lookup(c.Name)
		}
		if c.tool == nil {
			c.toolErr = registry.UnknownToolError(c.ToolCall)
		}
	}
	return c.tool, c.toolErr
}

// Registry returns the registry the call's tool is looked up in.
func (c *Call) Registry() *registry.Registry { return c.reg }

// Validated reports whether Validate accepted c.Args.
func (c *Call) Validated() bool { return c.validated }

// TimedOut reports whether the deadline of Timeout or Deadline passed
// before the handler returned.
func (c *Call) TimedOut() bool { return c.timedOut.Load() }

// Log returns the call's logger (ToolCall.Logger, which carries correlationId
// and runId), or slog.Default() when there is none.
func (c *Call) Log() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// toolError returns a StructuredError carrying the call's ids, retryable
// as its code is by default (mcp.NewToolError).
func (c *Call) toolError(code mcp.ErrorCode, msg string, details map[string]any) *mcp.StructuredError {
	se := mcp.NewToolError(code, msg, details)
	se.CorrelationID, se.RunID = c.CorrelationID, c.RunID
	return se
}

// fillIDs sets the call's ids on se where they are empty.
func (c *Call) fillIDs(se *mcp.StructuredError) {
	if se.CorrelationID == "" {
		se.CorrelationID = c.CorrelationID
	}
	if se.RunID == "" {
		se.RunID = c.RunID
	}
}

// toolTimeout and toolSerial read a tool's per-call settings.
func toolTimeout(t *registry.Tool) time.Duration { return t.Timeout() }

func toolSerial(t *registry.Tool) bool { return t.Serial() }
