package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"sort"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/ids"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

type sessionKey struct{}

// SessionFromContext returns the server session (the connection) a
// request is served on, or nil outside a Server: the same *Session for
// every request of a connection, whatever their revision. What applies to
// the request itself (its revision, client capabilities and info, log
// level) is RequestFromContext's to answer.
func SessionFromContext(ctx context.Context) *Session {
	if req, ok := ctx.Value(requestKey{}).(*Request); ok {
		return req.Session
	}
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// withSession returns ctx carrying ss (SessionFromContext outside a request).
func withSession(ctx context.Context, ss *Session) context.Context {
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

func handleToolsList(ctx context.Context, req *Request) (any, error) {
	p, perr := decodePaginated(req)
	if perr != nil {
		return nil, perr
	}
	o := &req.Session.server.opts
	tools, err := o.Tools.ListTools(ctx)
	if err != nil {
		return nil, protocolError(req.Session, "tools/list", err)
	}
	page, next, perr := paginate(tools, func(t *Tool) string { return t.Name }, p.Cursor, o.PageSize)
	if perr != nil {
		return nil, perr
	}
	return &ListToolsResult{Tools: page, NextCursor: next}, nil
}

// callToolWire is how tools/call params are decoded: CallToolParams, with
// a _meta that leaves out the 2026-07-28 protocol members (revision, client
// capabilities and info, log level), which the request's scope holds
// already (see Request): decoding them into a map for every call costs
// more than the call. A 2026-07-28 request's _meta was read with its scope
// (requestMeta.Meta): its fields alone are decoded.
type callToolWire struct {
	callToolFields `json:",inline"`
	Meta           callMeta `json:"_meta,omitempty"`
}

// callToolFields are the members of tools/call params but _meta.
type callToolFields struct {
	Name           string                     `json:"name"`
	Arguments      jsontext.Value             `json:"arguments,omitzero"`
	Task           *TaskMetadata              `json:"task,omitzero"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string                     `json:"requestState,omitempty"`
}

// metaRule returns the _meta of a tools/call as the request's scope read
// it already (without the revision's own members), when there is such a
// reading of the request's current params; ok false: tools/call reads
// _meta itself. It is a column's rule (modernCallMeta; nil: none).
type metaRule func(req *Request) (meta Meta, ok bool)

// toolCallParams returns the params of a tools/call, a copy the call may
// change, one level deep (the argument bytes and values nested in Meta
// are shared, and only read): from the CallToolParams a middleware
// decoded (Params), when one did, else decoded here (callToolWire), with
// the _meta readMeta gives when it gives one. Meta leaves out the
// revision's own members either way (see callToolWire).
func toolCallParams(req *Request, readMeta metaRule) (*CallToolParams, error) {
	var meta Meta
	read := false
	if readMeta != nil {
		meta, read = readMeta(req)
	}
	p := new(CallToolParams)
	if c, ok := decodedBefore[CallToolParams](req); ok {
		// A copy of what the call may change (Meta, Task, the input
		// responses): the middleware that decoded c still holds it, and a
		// task's handler runs on another goroutine. The argument bytes are
		// shared: they are read, never written.
		*p = *c
		p.InputResponses = maps.Clone(c.InputResponses)
		if c.Task != nil {
			t := *c.Task
			if t.TTL != nil {
				ttl := *t.TTL
				t.TTL = &ttl
			}
			p.Task = &t
		}
		if read {
			p.Meta = meta
		} else {
			p.Meta = withoutRevisionMembers(c.Meta)
		}
		return p, nil
	}
	if read {
		if name, args, ok := readCommonCallTool(req.Params); ok {
			*p = CallToolParams{Name: name, Arguments: json.RawMessage(args), Meta: meta}
			return p, nil
		}
	}
	if err := decodeCallTool(req.Params, p, read, meta); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeCallTool decodes the params of a tools/call into p with the
// codec's arshaler (callToolWire); with read, p's Meta is meta and _meta
// is not decoded.
func decodeCallTool(params json.RawMessage, p *CallToolParams, read bool, meta Meta) error {
	var w callToolWire
	var err error
	if read {
		err = jsonv2.Unmarshal(params, &w.callToolFields)
		w.Meta = callMeta(meta)
	} else {
		err = jsonv2.Unmarshal(params, &w)
	}
	if err != nil {
		return invalidParams(err)
	}
	*p = CallToolParams{Name: w.Name, Arguments: json.RawMessage(w.Arguments), Task: w.Task, InputResponses: w.InputResponses,
		RequestState: w.RequestState, Meta: Meta(w.Meta)}
	return nil
}

var (
	// errNotCommon stops readCommonCallTool at params it leaves to
	// decodeCallTool.
	errNotCommon    = errors.New("mcp: not the common tools/call params")
	memberName      = []byte(`"name"`)
	memberArguments = []byte(`"arguments"`)
	memberMeta      = []byte(`"_meta"`)
)

// readCommonCallTool reads the params of the common tools/call, whose
// _meta the request's scope read already: a string name without escapes,
// an object of arguments (the bytes of params, not a copy: argument bytes
// are read, never written), _meta and no other member, each name without
// escapes, read with the strict decoder. ok is false for any other params
// (a missing name, a null, task, inputResponses, requestState, another
// member, an error), which decodeCallTool decodes and refuses in its own
// words: what it makes of the common ones is what this returns.
func readCommonCallTool(params json.RawMessage) (name string, args jsontext.Value, ok bool) {
	if jsontext.Value(params).Kind() != '{' {
		return "", nil, false
	}
	err := jsonrpc.WithDecoder(params, func(dec *jsontext.Decoder) error {
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		var nameV jsontext.Value
		for dec.PeekKind() != '}' {
			key, err := dec.ReadValue()
			if err != nil {
				return err
			}
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			switch {
			case bytes.Equal(key, memberName) && v.Kind() == '"' && bytes.IndexByte(v, '\\') < 0:
				nameV = v
			case bytes.Equal(key, memberArguments) && v.Kind() == '{':
				args = v
			case bytes.Equal(key, memberMeta):
			default:
				return errNotCommon
			}
		}
		if nameV == nil {
			return errNotCommon
		}
		if _, err := dec.ReadToken(); err != nil { // the object's end
			return err
		}
		if _, err := dec.ReadToken(); err != io.EOF { // and nothing after it
			return errNotCommon
		}
		name = string(nameV[1 : len(nameV)-1])
		return nil
	})
	if err != nil {
		return "", nil, false
	}
	return name, args, true
}

// withoutRevisionMembers returns a copy of m without the members callMeta
// skips; nil when nothing is left (as callMeta leaves an empty _meta).
func withoutRevisionMembers(m Meta) Meta {
	if len(m) == 0 {
		return nil
	}
	keys := [...]string{revision.MetaProtocolVersion, revision.MetaClientCapabilities, revision.MetaClientInfo, revision.MetaLogLevel}
	n := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			n++
		}
	}
	if n == 0 {
		return maps.Clone(m)
	}
	out := make(Meta, len(m)-n)
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// sameValue reports whether a and b are the same bytes in memory (not
// merely equal ones).
func sameValue(a, b jsontext.Value) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// callMeta is a request's _meta without the protocol members.
type callMeta Meta

// UnmarshalJSONFrom decodes the members of _meta other than the protocol
// ones, which it skips.
func (m *callMeta) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '{' { // null, or the error a Meta gets
		var plain Meta
		return jsonv2.UnmarshalDecode(dec, &plain)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		switch revision.MemberOf(name) {
		case revision.MemberVersion, revision.MemberCaps, revision.MemberInfo, revision.MemberLevel:
			err = dec.SkipValue() // the revision's own members
		default:
			err = decodeMetaMember(dec, name, (*Meta)(m))
		}
		if err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// readToolCall reads a tools/call for its input rounds (the inputReader
// of each column of the method table, with its rules: legacyToolsCallInput,
// modernToolsCallInput): it checks the params, reading _meta by the
// column's metaRule, builds the ToolCall the rounds run (the request's
// r.call: every round runs the same call, with the same ids, logger and
// progress), and applies the column's task gate. The call's answer is
// mapped from what the rounds end with (toolCallOutcome), unless the gate
// put it on the task path, whose rules answer.
func readToolCall(ctx context.Context, req *Request, readMeta metaRule, gate taskGate) (inputTarget, error) {
	if req.Params == nil || jsontext.Value(req.Params).Kind() != '{' {
		return inputTarget{}, &Error{Code: CodeInvalidParams, Message: "Invalid params: tools/call requires params {name, arguments}"}
	}
	p, err := toolCallParams(req, readMeta)
	if err != nil {
		return inputTarget{}, err
	}
	if p.Name == "" {
		return inputTarget{}, &Error{Code: CodeInvalidParams, Message: "Invalid params: name is required"}
	}
	switch {
	case p.Arguments == nil:
		p.Arguments = json.RawMessage("{}")
	case jsontext.Value(p.Arguments).Kind() != '{':
		return inputTarget{}, &Error{Code: CodeInvalidParams, Message: "Invalid params: arguments must be an object"}
	}
	ss := req.Session
	opts := &ss.server.opts
	corr, _ := p.Meta[MetaCorrelationID].(string)
	var run string
	switch {
	case corr == "" && ss.server.pairIDs:
		corr, run = ids.NewUUIDPair()
	case corr == "":
		corr, run = opts.NewID(), opts.NewID()
	default:
		run = opts.NewID()
	}
	call := &ToolCall{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta, Task: p.Task,
		CorrelationID: corr, RunID: run, Session: ss}
	call.logh = callHandler{next: ss.log.Handler(), corr: corr, run: call.RunID}
	call.logv = *slog.New(&call.logh)
	call.Logger = &call.logv
	req.r.call = call
	if e := gate(ctx, req, call); e != nil {
		return inputTarget{}, e
	}
	t := inputTarget{name: p.Name, args: jsontext.Value(p.Arguments), responses: p.InputResponses, state: p.RequestState}
	if call.Task == nil {
		t.outcome = toolCallOutcome
	}
	return t, nil
}

// handleToolsCall serves tools/call in the input rounds its row declares
// (readToolCall built its ToolCall, and runTask is its column's task
// rule): a call on the task path runs by the task rules, any other
// through the ToolSource, whose outcome is this round's. Its Input is its
// context's.
func handleToolsCall(ctx context.Context, req *Request, runTask taskRule) (any, error) {
	call := req.r.call
	if call == nil { // not run by withInputRounds
		return nil, &Error{Code: CodeInternalError, Message: "Internal error: tools/call served without its call"}
	}
	if call.Task != nil {
		return runTask(ctx, req, call)
	}
	if req.f.vals.call.Store(call); ToolCallFromContext(ctx) != call {
		ctx = WithToolCall(ctx, call) // a middleware gave a context of its own
	}
	res, err := req.Session.server.opts.Tools.CallTool(ctx, call)
	if res == nil {
		return nil, err // not a typed nil in an interface
	}
	return res, err
}

// toolCallOutcome maps what the input rounds of a tools/call not run as
// a task end with to its answer (toolResponse): its result is the tool
// result, a tool's error an isError result, an *Error a JSON-RPC error.
func toolCallOutcome(req *Request, out any, err error) (any, error) {
	res, _ := out.(*CallToolResult)
	return req.r.toolResponse(req.r.call, res, err)
}

// toolResponse maps the outcome of a tools/call to its answer: a tool's
// error becomes an isError result with the call's ids, an *Error stays a
// JSON-RPC error, an *InputRequiredError an input-required answer.
func (r *responder) toolResponse(call *ToolCall, res *CallToolResult, err error) (any, error) {
	call.progress.finish() // no progress notification follows the response
	if err != nil {
		var rpcErr *Error
		var ir *InputRequiredError
		var p *errPanic
		switch {
		case errors.As(err, &ir):
			return nil, ir
		case errors.As(err, &rpcErr):
			e := *rpcErr
			if se, ok := rpcErr.Data.(*StructuredError); ok {
				e.Data = withIDs(se, call)
			}
			return nil, &e
		case errors.As(err, &p):
			call.Logger.Error("mcp: tool call panicked", "tool", call.Name)
			err = &StructuredError{Code: ErrInternal, Message: "internal error", Details: map[string]any{"reason": "panic"}}
		}
		var se *StructuredError
		if !errors.As(err, &se) {
			se = plainError(r.ss.server, call.Logger, "tool "+quote(call.Name), err)
		}
		res = ToolErrorResult(withIDs(se, call))
	}
	if res == nil {
		res = &CallToolResult{}
	}
	return res, nil
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
