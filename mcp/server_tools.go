package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"sort"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

type sessionKey struct{}

// SessionFromContext returns the server session a request is served on, or
// nil outside a Server.
func SessionFromContext(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

func (ss *Session) requestContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, sessionKey{}, ss)
}

const cursorPrefix = "keel:after:"

func encodeCursor(afterName string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + afterName))
}

func decodeCursor(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) {
		return "", false
	}
	return string(b[len(cursorPrefix):]), true
}

// paginate returns the page of a name-sorted list that follows cursor, and
// the cursor of the next page ("" on the last page).
func paginate[T any](items []T, name func(T) string, cursor string, size int) (page []T, next string, err *Error) {
	start := 0
	if cursor != "" {
		after, ok := decodeCursor(cursor)
		if !ok {
			return nil, "", &Error{Code: CodeInvalidParams, Message: "Invalid params: invalid cursor"}
		}
		start = sort.Search(len(items), func(i int) bool { return name(items[i]) > after })
	}
	end := min(start+size, len(items))
	if end < len(items) {
		next = encodeCursor(name(items[end-1]))
	}
	return items[start:end], next, nil
}

func (ss *Session) handleToolsList(m *jsonrpc.Message, r responder) {
	var p PaginatedParams
	if m.Params != nil {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			r.error(invalidParams(err))
			return
		}
	}
	tools, err := ss.server.opts.Tools.ListTools(r.context(ss.messageContext()))
	if err != nil {
		r.error(asProtocolError(err))
		return
	}
	page, next, perr := paginate(tools, func(t *Tool) string { return t.Name }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		r.error(perr)
		return
	}
	r.result(&ListToolsResult{Tools: downgradeTools(page, r.version()), NextCursor: next})
}

func asProtocolError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
}

// handleToolsCall checks and registers one tools/call and returns the job
// that runs it.
func (ss *Session) handleToolsCall(m *jsonrpc.Message, r responder) func() {
	if m.Params == nil || m.Params.Kind() != '{' {
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: tools/call requires params {name, arguments}"})
		return nil
	}
	var p CallToolParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		r.error(invalidParams(err))
		return nil
	}
	if p.Name == "" {
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: name is required"})
		return nil
	}
	switch {
	case p.Arguments == nil:
		p.Arguments = jsontext.Value("{}")
	case p.Arguments.Kind() != '{':
		r.error(&Error{Code: CodeInvalidParams, Message: "Invalid params: arguments must be an object"})
		return nil
	}
	opts := &ss.server.opts
	corr, _ := p.Meta[MetaCorrelationID].(string)
	if corr == "" {
		corr = opts.NewID()
	}
	if r.mod != nil {
		p.Task = nil // tasks are an extension in 2026-07-28: params.task is ignored
	}
	call := &ToolCall{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta, Task: p.Task,
		CorrelationID: corr, RunID: opts.NewID(), Session: ss}
	call.Logger = slog.New(&callHandler{next: ss.log.Handler(), corr: corr, run: call.RunID})
	if r.mod == nil && (p.Task != nil || ss.server.tasks != nil) && ss.taskCall(r, call) { // server_tasks.go
		return nil
	}
	if r.mod != nil && ss.server.tasks != nil {
		if job, handled := ss.modernTaskCall(m, r, call, &p); handled { // tasks_modern.go
			return job
		}
	}
	parent := r.context(ss.messageContext())
	in, ok := r.inputFor(parent, MethodToolsCall, p.Name, p.Arguments, p.InputResponses, p.RequestState) // input_serve.go
	if !ok {
		return nil
	}
	r.call = call
	f := ss.begin(m, r, WithToolCall(parent, call), call)
	if f == nil {
		return nil
	}
	call.respond = func(res *CallToolResult, err error) bool {
		ss.sendToolResponse(r, call, res, err)
		return true
	}
	f.in = in
	return f.runTool
}

// runTool runs the tools/call f owns: the ToolSource, then (legacy
// sessions) as many rounds of client input as the handler asks for.
func (f *inflight) runTool() { f.run(f.callTool) }

func (f *inflight) callTool(ctx context.Context) (any, error) {
	src, call := f.ss.server.opts.Tools, f.call
	if f.in != nil {
		ctx = withInput(ctx, f.in)
	}
	res, err := src.CallTool(ctx, call)
	var ir *InputRequiredError
	if err != nil && f.r.mod == nil && errors.As(err, &ir) {
		return f.r.bridge(ctx, f.in, ir, func(ctx context.Context) (any, error) { return src.CallTool(ctx, call) })
	}
	if res == nil {
		return nil, err // not a typed nil in an interface
	}
	return res, err
}

func (ss *Session) sendToolResponse(r responder, call *ToolCall, res *CallToolResult, err error) {
	call.progress.finish() // no progress notification follows the response
	if err != nil {
		var rpcErr *Error
		var ir *InputRequiredError
		var p *errPanic
		switch {
		case errors.As(err, &ir):
			r.inputRequired(ir)
			return
		case errors.As(err, &rpcErr):
			e := *rpcErr
			if se, ok := rpcErr.Data.(*StructuredError); ok {
				e.Data = withIDs(se, call)
			}
			r.error(&e)
			return
		case errors.As(err, &p):
			call.Logger.Error("mcp: tool call panicked", "tool", call.Name)
			err = &StructuredError{Code: ErrInternal, Message: "internal error", Details: map[string]any{"reason": "panic"}}
		}
		var se *StructuredError
		if !errors.As(err, &se) {
			se = &StructuredError{Code: ErrInternal, Message: err.Error()}
		}
		res = ToolErrorResult(withIDs(se, call))
	}
	if res == nil {
		res = &CallToolResult{}
	}
	r.result(downgradeResult(res, r.version()))
}

// withIDs returns se with the call's correlation and run ids filled in.
func withIDs(se *StructuredError, call *ToolCall) *StructuredError {
	if se.CorrelationID != "" && se.RunID != "" {
		return se
	}
	c := *se
	if c.CorrelationID == "" {
		c.CorrelationID = call.CorrelationID
	}
	if c.RunID == "" {
		c.RunID = call.RunID
	}
	return &c
}

// callHandler adds a call's correlationId and runId to every record.
type callHandler struct {
	next      slog.Handler
	corr, run string
}

func (h *callHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *callHandler) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(slog.String("correlationId", h.corr), slog.String("runId", h.run))
	return h.next.Handle(ctx, r)
}

func (h *callHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &callHandler{next: h.next.WithAttrs(as), corr: h.corr, run: h.run}
}

func (h *callHandler) WithGroup(name string) slog.Handler {
	// Keep the ids at the top level: add them before opening the group.
	return h.next.WithAttrs([]slog.Attr{slog.String("correlationId", h.corr), slog.String("runId", h.run)}).WithGroup(name)
}
