package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// AuditSink receives a pair of events per audited tools/call (the seam
// of a decision trail): Enter when the call is about to be dispatched, Exit
// when it is over. Sinks are called on the goroutine serving the call and
// must be safe for concurrent use.
type AuditSink interface {
	// Enter records the start of a call. An error stops the call: it fails
	// with INTERNAL "audit enter failed" and the handler does not run.
	Enter(ctx context.Context, ev ToolEnterEvent) error
	// Exit records the end of a call. An error is logged; it never replaces
	// the call's own result or error. For a call whose handler outlasted
	// its deadline, Exit runs when the handler returns, on its goroutine,
	// with the call's context values and no cancellation.
	Exit(ctx context.Context, ev ToolExitEvent) error
}

// ToolEnterEvent is what AuditSink.Enter receives.
type ToolEnterEvent struct {
	Tool string
	// Args are the arguments the handler will receive (validated when
	// Validate runs before AuditEnter, as in Standard). Do not modify them.
	Args          json.RawMessage
	Timestamp     time.Time
	CorrelationID string
	RunID         string
}

// ToolExitEvent is what AuditSink.Exit receives.
type ToolExitEvent struct {
	Tool          string
	CorrelationID string
	RunID         string
	// Start is the Timestamp of the matching Enter event, or, when the call
	// failed before AuditEnter, the time AuditExit started.
	Start    time.Time
	End      time.Time
	Duration time.Duration
	// Result is the call's result; for a timed-out call whose handler
	// returned later, the late result the client never received.
	Result *mcp.CallToolResult
	// Err is the error the call ended with (the TIMEOUT error for a timed
	// out call), nil on success.
	Err     error
	Outcome Outcome
}

// Outcome says how a tools/call ended.
type Outcome string

// Outcomes reported in ToolExitEvent.Outcome.
const (
	// OutcomeSuccess: the handler returned a result that is not an error.
	OutcomeSuccess Outcome = "success"
	// OutcomeToolError: an isError result or a tool error (validation,
	// handler failure, panic, audit-enter failure, ...).
	OutcomeToolError Outcome = "tool_error"
	// OutcomeTimeout: the deadline passed and the handler gave up (returned
	// the context's error).
	OutcomeTimeout Outcome = "timeout"
	// OutcomeLateCompleted: the deadline passed (TIMEOUT was answered) and
	// the handler finished its work anyway, later.
	OutcomeLateCompleted Outcome = "late_completed"
	// OutcomeAborted: the caller went away (cancellation or disconnect)
	// and the handler returned an error.
	OutcomeAborted Outcome = "aborted"
	// OutcomeDisconnectedCompleted: the caller went away and the handler
	// returned normally.
	OutcomeDisconnectedCompleted Outcome = "disconnected_completed"
	// OutcomeProtocolError: the call ended with a JSON-RPC error (such as
	// an unknown tool).
	OutcomeProtocolError Outcome = "protocol_error"
)

// NopAuditSink returns the default sink, which records nothing. Audit stages
// given it (or nil) add no work to a call.
func NopAuditSink() AuditSink { return nopSink{} }

type nopSink struct{}

func (nopSink) Enter(context.Context, ToolEnterEvent) error { return nil }
func (nopSink) Exit(context.Context, ToolExitEvent) error   { return nil }

// Audit holds the audit seam: a sink and a clock. Its Enter and Exit
// stages are usually placed Exit first (outside), then Enter, so that Exit
// also records calls that failed in Enter or in stages between the two.
type Audit struct {
	// Sink receives the events; nil means NopAuditSink.
	Sink AuditSink
	// Now is the clock for timestamps; nil means time.Now.
	Now func() time.Time
}

func (a *Audit) sink() (AuditSink, func() time.Time) {
	var s AuditSink = nopSink{}
	now := time.Now
	if a != nil {
		if a.Sink != nil {
			s = a.Sink
		}
		if a.Now != nil {
			now = a.Now
		}
	}
	return s, now
}

// AuditEnter returns a stage that reports each call to sink.Enter before
// passing it on (see Audit.Enter).
func AuditEnter(sink AuditSink) Middleware { return (&Audit{Sink: sink}).Enter() }

// AuditExit returns a stage that reports each call to sink.Exit after the
// rest of the chain returns (see Audit.Exit).
func AuditExit(sink AuditSink) Middleware { return (&Audit{Sink: sink}).Exit() }

// Enter returns the audit-enter stage: it sends a ToolEnterEvent and, if the
// sink fails, stops the call with an INTERNAL tool error "audit enter failed"
// (the sink's error is logged, not sent).
func (a *Audit) Enter() Middleware {
	sink, now := a.sink()
	return func(next Handler) Handler {
		if _, nop := sink.(nopSink); nop {
			return next
		}
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			ts := now()
			c.enteredAt = ts
			if err := sink.Enter(ctx, ToolEnterEvent{Tool: c.Name, Args: c.Args, Timestamp: ts, CorrelationID: c.CorrelationID, RunID: c.RunID}); err != nil {
				c.Log().Error("middleware: audit enter failed", "tool", c.Name, "error", err)
				return nil, c.toolError(mcp.ErrInternal, "audit enter failed", map[string]any{"reason": "audit_enter", "tool": c.Name})
			}
			return next(ctx, c)
		}
	}
}

// Exit returns the audit-exit stage: it runs the rest of the chain and then,
// whatever happened inside (including a failed Enter or Validate placed
// inside it, and a panic on its way out), sends a ToolExitEvent, once the
// tool's handler has really returned (a Timeout inside may return first:
// see mcp.ToolCall.AfterHandler). A sink failure is logged and never hides
// the call's own result or error.
func (a *Audit) Exit() Middleware {
	sink, now := a.sink()
	return func(next Handler) Handler {
		if _, nop := sink.(nopSink); nop {
			return next
		}
		return func(ctx context.Context, c *Call) (res *mcp.CallToolResult, err error) {
			start := now()
			done := false
			defer func() {
				if !done { // a panic is unwinding through this stage: record it, let it continue
					exit(ctx, sink, now, c, start, nil, c.toolError(mcp.ErrInternal, "tool "+quote(c.Name)+" panicked", map[string]any{"reason": "panic"}))
				}
			}()
			res, err = next(ctx, c)
			done = true
			if c.Detached() { // a Timeout inside returned first: the record waits for the handler
				r, e := res, err // copies: the named results would escape
				// By then the caller's context has ended: the sink gets
				// its values without its cancellation.
				c.AfterHandler(func() { exit(context.WithoutCancel(ctx), sink, now, c, start, r, e) })
			} else {
				exit(ctx, sink, now, c, start, res, err)
			}
			return res, err
		}
	}
}

func exit(ctx context.Context, sink AuditSink, now func() time.Time, c *Call, start time.Time, res *mcp.CallToolResult, err error) {
	if !c.enteredAt.IsZero() {
		start = c.enteredAt
	}
	end := now()
	ev := ToolExitEvent{
		Tool: c.Name, CorrelationID: c.CorrelationID, RunID: c.RunID,
		Start: start, End: end, Duration: end.Sub(start),
		Result: res, Err: err, Outcome: outcome(ctx, c, res, err),
	}
	if c.timedOut.Load() {
		ev.Result, _ = c.late()
	}
	if xerr := sink.Exit(ctx, ev); xerr != nil {
		c.Log().Error("middleware: audit exit failed", "tool", c.Name, "outcome", ev.Outcome, "error", xerr)
	}
}

// outcome classifies how a call ended; ctx is the context the audit stage
// received (the caller's).
func outcome(ctx context.Context, c *Call, res *mcp.CallToolResult, err error) Outcome {
	if c.timedOut.Load() {
		if _, lateErr := c.late(); isContextError(lateErr) {
			return OutcomeTimeout
		}
		return OutcomeLateCompleted
	}
	var pe *mcp.Error
	if err != nil && errors.As(err, &pe) {
		return OutcomeProtocolError
	}
	if ctx.Err() != nil {
		if err != nil || (res != nil && res.IsError) {
			return OutcomeAborted
		}
		return OutcomeDisconnectedCompleted
	}
	if err != nil || res == nil || res.IsError {
		return OutcomeToolError
	}
	return OutcomeSuccess
}
