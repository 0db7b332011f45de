package mcp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
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
	tools, err := ss.server.opts.Tools.ListTools(ss.requestContext(ss.messageContext()))
	if err != nil {
		r.error(asProtocolError(err))
		return
	}
	page, next, perr := paginate(tools, func(t *Tool) string { return t.Name }, p.Cursor, ss.server.opts.PageSize)
	if perr != nil {
		r.error(perr)
		return
	}
	r.result(&ListToolsResult{Tools: downgradeTools(page, ss.ProtocolVersion()), NextCursor: next})
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
	call := &ToolCall{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta, Task: p.Task,
		CorrelationID: corr, RunID: opts.NewID(), Session: ss}
	call.Logger = slog.New(&callHandler{next: ss.log.Handler(), corr: corr, run: call.RunID})
	if (p.Task != nil || ss.server.tasks != nil) && ss.taskCall(r, call) { // server_tasks.go
		return nil
	}
	key := idKey(m.ID)
	ctx, cancel := context.WithCancel(WithToolCall(ss.requestContext(ss.messageContext()), call))
	ss.mu.Lock()
	if _, dup := ss.cancels[key]; dup {
		ss.mu.Unlock()
		cancel()
		r.error(&Error{Code: CodeInvalidRequest, Message: "Invalid Request: id is already in use by an in-flight request"})
		return nil
	}
	ss.inflight[key] = call
	ss.cancels[key] = cancel
	ss.mu.Unlock()
	r.call = call
	call.respond = func(res *CallToolResult, err error) bool {
		ss.sendToolResponse(r, call, res, err)
		return true
	}
	ss.inflightWG.Add(1)
	return func() { ss.runToolCall(ctx, cancel, key, call, r) }
}

func (ss *Session) runToolCall(ctx context.Context, cancel context.CancelFunc, key string, call *ToolCall, r responder) {
	defer ss.inflightWG.Done()
	var res *CallToolResult
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				call.Logger.Error("mcp: tool call panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res, err = nil, &StructuredError{Code: ErrInternal, Message: "internal error", Details: map[string]any{"reason": "panic"}}
			}
		}()
		res, err = ss.server.opts.Tools.CallTool(ctx, call)
	}()
	cancelled := ctx.Err() != nil
	cancel()
	ss.mu.Lock()
	delete(ss.inflight, key)
	delete(ss.cancels, key)
	ss.mu.Unlock()
	if call.responded.CompareAndSwap(false, true) {
		ss.sendToolResponse(r, call, res, err)
		return
	}
	switch {
	case cancelled && !call.earlyResponse.Load():
		call.Logger.Debug("mcp: response suppressed (request cancelled)", "tool", call.Name)
		if r.batch != nil {
			r.batch.skip()
		}
	default:
		call.Logger.Warn("mcp: late result dropped (already answered)", "tool", call.Name, "outcome", "late_completed", "isError", err != nil || (res != nil && res.IsError))
	}
}

func (ss *Session) sendToolResponse(r responder, call *ToolCall, res *CallToolResult, err error) {
	call.progress.finish() // no progress notification follows the response
	if err != nil {
		var rpcErr *Error
		if errors.As(err, &rpcErr) {
			e := *rpcErr
			if se, ok := rpcErr.Data.(*StructuredError); ok {
				e.Data = withIDs(se, call)
			}
			r.error(&e)
			return
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
	r.result(downgradeResult(res, ss.ProtocolVersion()))
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
