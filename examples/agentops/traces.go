package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

// A trace is one tools/call, identified by the call's runId. The audit sink
// opens it (event tool.invoke) and closes it (event tool.result); in
// between, agent runs (agent.run) and workflow steps (step.execute) made on
// behalf of the call are added to it.
const (
	traceRunning = "running"
	traceSuccess = "success"
	traceFailure = "failure"
)

// Trace event types.
const (
	eventInvoke = "tool.invoke"
	eventResult = "tool.result"
	eventAgent  = "agent.run"
	eventStep   = "step.execute"
)

// traceSink is the middleware.AuditSink that records tool calls into the
// store, and the recorder of the events inside them.
type traceSink struct {
	st  *store
	log *slog.Logger

	mu  sync.Mutex
	seq map[string]int64 // open trace → last event sequence number
}

var _ middleware.AuditSink = (*traceSink)(nil)

func newTraceSink(st *store, log *slog.Logger) *traceSink {
	return &traceSink{st: st, log: log, seq: map[string]int64{}}
}

// next returns the next sequence number of trace id (1 for the first).
func (t *traceSink) next(id string, open, close bool) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.seq[id]
	if !ok && !open && !close {
		return 0, false // not a trace of this process (or already closed)
	}
	n++
	if close {
		delete(t.seq, id)
	} else {
		t.seq[id] = n
	}
	return n, true
}

// Enter implements middleware.AuditSink: it opens the trace of the call.
func (t *traceSink) Enter(ctx context.Context, ev middleware.ToolEnterEvent) error {
	if ev.RunID == "" {
		return nil
	}
	var subject struct {
		WorkflowID string `json:"workflowId"`
		AgentID    string `json:"agentId"`
	}
	if ev.Tool == "workflow_run" || ev.Tool == "agent_run" {
		_ = json.Unmarshal(ev.Args, &subject) // validated already; best effort
	}
	start := ev.Timestamp.UnixNano()
	if _, err := t.st.db.ExecContext(ctx, `INSERT INTO agentops_traces
		(id, tool, workflow_id, agent_id, correlation_id, status, outcome, error_code, start_at, end_at, duration_ns)
		VALUES ($1, $2, $3, $4, $5, $6, '', '', $7, 0, 0)`,
		ev.RunID, ev.Tool, subject.WorkflowID, subject.AgentID, ev.CorrelationID, traceRunning, start); err != nil {
		return err
	}
	seq, _ := t.next(ev.RunID, true, false)
	return t.insertEvent(ctx, ev.RunID, seq, eventInvoke, ev.Tool, start, "", 0, nil)
}

// Exit implements middleware.AuditSink: it closes the trace of the call.
func (t *traceSink) Exit(ctx context.Context, ev middleware.ToolExitEvent) error {
	if ev.RunID == "" {
		return nil
	}
	ctx = context.WithoutCancel(ctx) // record aborted calls too
	status, code := traceSuccess, ""
	if ev.Outcome != middleware.OutcomeSuccess {
		status, code = traceFailure, errorCode(ev)
	}
	end := ev.End.UnixNano()
	if _, err := t.st.db.ExecContext(ctx, `INSERT INTO agentops_traces
		(id, tool, workflow_id, agent_id, correlation_id, status, outcome, error_code, start_at, end_at, duration_ns)
		VALUES ($1, $2, '', '', $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome,
			error_code = excluded.error_code, end_at = excluded.end_at, duration_ns = excluded.duration_ns`,
		ev.RunID, ev.Tool, ev.CorrelationID, status, string(ev.Outcome), code, ev.Start.UnixNano(), end, ev.Duration.Nanoseconds()); err != nil {
		return err
	}
	seq, _ := t.next(ev.RunID, false, true)
	payload := map[string]any{"outcome": string(ev.Outcome)}
	if code != "" {
		payload["errorCode"] = code
	}
	return t.insertEvent(ctx, ev.RunID, seq, eventResult, ev.Tool, end, status, ev.Duration, payload)
}

// errorCode names how a failed call failed: the StructuredError code, or
// PROTOCOL_ERROR, or the outcome.
func errorCode(ev middleware.ToolExitEvent) string {
	var se *mcp.StructuredError
	if errors.As(ev.Err, &se) {
		return string(se.Code)
	}
	var pe *mcp.Error
	if errors.As(ev.Err, &pe) {
		return "PROTOCOL_ERROR"
	}
	return string(ev.Outcome)
}

// event adds an event to the trace of the tool call running in ctx, if
// any. Failures are logged: tracing never fails the work it records.
func (t *traceSink) event(ctx context.Context, typ, name string, err error, d time.Duration, payload map[string]any) {
	call := mcp.ToolCallFromContext(ctx)
	if call == nil || call.RunID == "" {
		return
	}
	seq, ok := t.next(call.RunID, false, false)
	if !ok {
		return
	}
	status := traceSuccess
	if err != nil {
		status = traceFailure
		if payload == nil {
			payload = map[string]any{}
		}
		payload["error"] = err.Error()
	}
	at := t.st.now()
	if ierr := t.insertEvent(context.WithoutCancel(ctx), call.RunID, seq, typ, name, at, status, d, payload); ierr != nil {
		t.log.Error("agentops: recording trace event", "trace", call.RunID, "type", typ, "error", ierr)
	}
}

func (t *traceSink) insertEvent(ctx context.Context, id string, seq int64, typ, name string, at int64, status string, d time.Duration, payload map[string]any) error {
	p := "{}"
	if payload != nil {
		b, err := json.Marshal(payload, json.Deterministic(true))
		if err != nil {
			return err
		}
		p = string(b)
	}
	_, err := t.st.db.ExecContext(ctx, `INSERT INTO agentops_trace_events (trace_id, seq, type, name, ts, status, duration_ns, payload)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, seq, typ, name, at, status, d.Nanoseconds(), p)
	return err
}

// TraceListInput is trace_list's input.
type TraceListInput struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=10,description=Maximum number of traces (default 10)"`
	Status string `json:"status,omitempty" jsonschema:"enum=success,enum=failure,enum=running,description=Only traces with this status"`
	Tool   string `json:"tool,omitempty" jsonschema:"description=Only traces of this tool"`
}

// TraceSummary is one trace in trace_list's result.
type TraceSummary struct {
	TraceID    string  `json:"traceId"`
	Tool       string  `json:"tool"`
	WorkflowID string  `json:"workflowId,omitempty"`
	AgentID    string  `json:"agentId,omitempty"`
	StartTime  string  `json:"startTime"`
	EndTime    string  `json:"endTime,omitempty"`
	Status     string  `json:"status"`
	Outcome    string  `json:"outcome,omitempty"`
	ErrorCode  string  `json:"errorCode,omitempty"`
	EventCount int     `json:"eventCount"`
	DurationMs float64 `json:"durationMs"`
}

// TraceListOutput is trace_list's result, most recent first.
type TraceListOutput struct {
	Traces []TraceSummary `json:"traces"`
}

// TraceIDInput is trace_get's input.
type TraceIDInput struct {
	TraceID string `json:"traceId" jsonschema:"minLength=1,description=The ID of the trace (a tool call's runId)"`
}

// TraceEvent is one event of a trace.
type TraceEvent struct {
	Sequence   int64          `json:"sequence"`
	Type       string         `json:"type"`
	Name       string         `json:"name"`
	Timestamp  string         `json:"timestamp"`
	Status     string         `json:"status,omitempty"`
	DurationMs float64        `json:"durationMs"`
	Payload    jsontext.Value `json:"payload,omitzero"`
}

// TraceGetOutput is trace_get's result.
type TraceGetOutput struct {
	TraceSummary
	CorrelationID string       `json:"correlationId,omitempty"`
	Events        []TraceEvent `json:"events"`
}

// TraceAnalyzeInput is trace_analyze's input.
type TraceAnalyzeInput struct {
	TraceID string `json:"traceId,omitempty" jsonschema:"description=Analyze the steps of this trace; otherwise the recent tool calls per tool"`
	Limit   int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000,default=100,description=How many recent finished traces to analyze (without traceId)"`
}

// TraceStats aggregates calls (of one tool, or one step of a trace).
type TraceStats struct {
	Name          string  `json:"name"`
	Count         int     `json:"count"`
	Errors        int     `json:"errors"`
	ErrorRate     float64 `json:"errorRate"`
	TotalMs       float64 `json:"totalDurationMs"`
	AvgDurationMs float64 `json:"avgDurationMs"`
	MaxDurationMs float64 `json:"maxDurationMs"`
}

// TraceIssue is a problem trace_analyze found.
type TraceIssue struct {
	Type     string `json:"type"`
	Message  string `json:"message"`
	Severity string `json:"severity" jsonschema:"enum=low,enum=medium,enum=high,enum=critical"`
	Name     string `json:"name,omitempty"`
}

// TraceAnalyzeOutput is trace_analyze's result: overall metrics and a
// breakdown per tool (recent traces) or per step and agent (one trace),
// slowest first.
type TraceAnalyzeOutput struct {
	Scope     string       `json:"scope" jsonschema:"enum=trace,enum=recent"`
	TraceID   string       `json:"traceId,omitempty"`
	Summary   string       `json:"summary"`
	Metrics   TraceStats   `json:"metrics"`
	Breakdown []TraceStats `json:"breakdown"`
	Issues    []TraceIssue `json:"issues"`
}

// slowMs is the duration above which trace_analyze reports a slow call.
const slowMs = 1000

func registerTraceTools(reg *registry.Registry, t *traceSink) {
	const module = "trace"
	registry.MustRegister(reg, "trace_list", "Lists recent traces (one per tool call), most recent first.",
		t.list, &registry.ToolOptions{Title: "List traces", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "trace_get", "Returns a trace with its events: invocation, agent runs, workflow steps, result.",
		t.get, &registry.ToolOptions{Title: "Get trace", ReadOnly: true, Module: module})
	registry.MustRegister(reg, "trace_analyze", "Analyzes one trace's steps, or the recent tool calls per tool: counts, error rate, durations.",
		t.analyze, &registry.ToolOptions{Title: "Analyze traces", ReadOnly: true, Module: module})
}

const traceColumns = `t.id, t.tool, t.workflow_id, t.agent_id, t.correlation_id, t.status, t.outcome, t.error_code, t.start_at, t.end_at, t.duration_ns,
	(SELECT COUNT(*) FROM agentops_trace_events e WHERE e.trace_id = t.id)`

func scanTrace(row interface{ Scan(...any) error }) (TraceSummary, string, error) {
	var (
		s                 TraceSummary
		corr              string
		start, end, durNs int64
	)
	err := row.Scan(&s.TraceID, &s.Tool, &s.WorkflowID, &s.AgentID, &corr, &s.Status, &s.Outcome, &s.ErrorCode, &start, &end, &durNs, &s.EventCount)
	s.StartTime, s.EndTime, s.DurationMs = ts(start), ts(end), ms(durNs)
	return s, corr, err
}

// recentTraces returns the most recent traces.
func (t *traceSink) recentTraces(ctx context.Context, in TraceListInput) ([]TraceSummary, error) {
	var a sqlArgs
	where := " WHERE 1 = 1"
	if in.Status != "" {
		where += " AND t.status = " + a.add(in.Status)
	}
	if in.Tool != "" {
		where += " AND t.tool = " + a.add(in.Tool)
	}
	rows, err := t.st.db.QueryContext(ctx, `SELECT `+traceColumns+` FROM agentops_traces t`+where+
		` ORDER BY t.start_at DESC, t.id LIMIT `+a.add(clampLimit(in.Limit, 10, 1000)), a...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []TraceSummary{}
	for rows.Next() {
		s, _, err := scanTrace(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (t *traceSink) list(ctx context.Context, in TraceListInput) (TraceListOutput, error) {
	in.Limit = clampLimit(in.Limit, 10, 100)
	traces, err := t.recentTraces(ctx, in)
	return TraceListOutput{Traces: traces}, err
}

func traceNotFound(id string) error {
	return mcp.NewToolError(mcp.ErrNotFound, fmt.Sprintf("trace %q not found", id),
		map[string]any{"reason": "TRACE_NOT_FOUND", "traceId": id})
}

func (t *traceSink) get(ctx context.Context, in TraceIDInput) (TraceGetOutput, error) {
	s, corr, err := scanTrace(t.st.db.QueryRowContext(ctx, `SELECT `+traceColumns+` FROM agentops_traces t WHERE t.id = $1`, in.TraceID))
	if errors.Is(err, sql.ErrNoRows) {
		return TraceGetOutput{}, traceNotFound(in.TraceID)
	}
	if err != nil {
		return TraceGetOutput{}, err
	}
	out := TraceGetOutput{TraceSummary: s, CorrelationID: corr, Events: []TraceEvent{}}
	rows, err := t.st.db.QueryContext(ctx, `SELECT seq, type, name, ts, status, duration_ns, payload
		FROM agentops_trace_events WHERE trace_id = $1 ORDER BY seq`, in.TraceID)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			e       TraceEvent
			at, dur int64
			payload string
		)
		if err := rows.Scan(&e.Sequence, &e.Type, &e.Name, &at, &e.Status, &dur, &payload); err != nil {
			return out, err
		}
		e.Timestamp, e.DurationMs = ts(at), ms(dur)
		if payload != "{}" {
			e.Payload = jsontext.Value(payload)
		}
		out.Events = append(out.Events, e)
	}
	return out, rows.Err()
}

// sample is one duration to aggregate.
type sample struct {
	name   string
	failed bool
	ms     float64
}

// aggregate computes the overall metrics (named total) and the breakdown by
// name, slowest total first.
func aggregate(total string, samples []sample) (TraceStats, []TraceStats) {
	all := TraceStats{Name: total}
	by := map[string]*TraceStats{}
	breakdown := []TraceStats{}
	add := func(s *TraceStats, x sample) {
		s.Count++
		if x.failed {
			s.Errors++
		}
		s.TotalMs += x.ms
		s.MaxDurationMs = max(s.MaxDurationMs, x.ms)
	}
	finish := func(s *TraceStats) {
		if s.Count > 0 {
			s.ErrorRate = float64(s.Errors) / float64(s.Count)
			s.AvgDurationMs = s.TotalMs / float64(s.Count)
		}
	}
	for _, x := range samples {
		add(&all, x)
		s := by[x.name]
		if s == nil {
			s = &TraceStats{Name: x.name}
			by[x.name] = s
		}
		add(s, x)
	}
	finish(&all)
	for _, s := range by {
		finish(s)
		breakdown = append(breakdown, *s)
	}
	slices.SortFunc(breakdown, func(a, b TraceStats) int {
		if a.TotalMs != b.TotalMs {
			if a.TotalMs > b.TotalMs {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return all, breakdown
}

func (t *traceSink) analyze(ctx context.Context, in TraceAnalyzeInput) (TraceAnalyzeOutput, error) {
	var samples []sample
	out := TraceAnalyzeOutput{Scope: "recent", TraceID: in.TraceID, Issues: []TraceIssue{}}
	if in.TraceID != "" {
		out.Scope = "trace"
		tr, err := t.get(ctx, TraceIDInput{TraceID: in.TraceID})
		if err != nil {
			return out, err
		}
		for _, e := range tr.Events {
			if e.Type == eventAgent || e.Type == eventStep {
				samples = append(samples, sample{name: e.Type + ":" + e.Name, failed: e.Status == traceFailure, ms: e.DurationMs})
			}
		}
		if tr.Status == traceFailure {
			out.Issues = append(out.Issues, TraceIssue{Type: "error", Severity: "high", Name: tr.Tool,
				Message: fmt.Sprintf("the call of %s failed (%s)", tr.Tool, tr.ErrorCode)})
		}
	} else {
		traces, err := t.recentTraces(ctx, TraceListInput{Limit: clampLimit(in.Limit, 100, 1000)})
		if err != nil {
			return out, err
		}
		for _, tr := range traces {
			if tr.Status != traceRunning {
				samples = append(samples, sample{name: tr.Tool, failed: tr.Status == traceFailure, ms: tr.DurationMs})
			}
		}
	}
	out.Metrics, out.Breakdown = aggregate(out.Scope, samples)
	for _, s := range out.Breakdown {
		if s.Errors > 0 {
			sev := "medium"
			if s.ErrorRate >= 0.5 {
				sev = "high"
			}
			out.Issues = append(out.Issues, TraceIssue{Type: "error_rate", Severity: sev, Name: s.Name,
				Message: fmt.Sprintf("%s failed %d of %d times", s.Name, s.Errors, s.Count)})
		}
		if s.MaxDurationMs > slowMs {
			out.Issues = append(out.Issues, TraceIssue{Type: "slow", Severity: "low", Name: s.Name,
				Message: fmt.Sprintf("%s took up to %.0f ms", s.Name, s.MaxDurationMs)})
		}
	}
	what := "tool calls"
	if out.Scope == "trace" {
		what = "steps in trace " + in.TraceID
	}
	out.Summary = fmt.Sprintf("%d %s, %d failed (error rate %.0f%%), average %.2f ms", out.Metrics.Count, what,
		out.Metrics.Errors, out.Metrics.ErrorRate*100, out.Metrics.AvgDurationMs)
	if len(out.Breakdown) > 0 {
		out.Summary += fmt.Sprintf("; most time in %s (%.2f ms)", out.Breakdown[0].Name, out.Breakdown[0].TotalMs)
	}
	return out, nil
}
