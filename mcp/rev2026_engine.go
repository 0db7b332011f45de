package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/internal/revision"
)

// modernEngine serves revision 2026-07-28: each request statelessly from
// its own _meta (revision, client capabilities, log level, progress
// token), whatever the session's state; results stamped with resultType,
// serverInfo and caching hints; a handler's need for input answered as an
// input_required result with a sealed requestState.
type modernEngine struct{}

// dispatch checks in the order the specification gives (_meta -32602,
// version -32022, method -32601), then starts the method.
func (e modernEngine) dispatch(ss *Session, m *jsonrpc.Message, r responder) job {
	meta, err := parseRequestMeta(m.Params)
	return e.dispatchMeta(ss, m, r, meta, err)
}

// dispatchMeta is dispatch with the request's _meta parsed (meta, or the
// error e of parseRequestMeta).
func (modernEngine) dispatchMeta(ss *Session, m *jsonrpc.Message, r responder, meta requestMeta, e *Error) job {
	if e != nil {
		return refuseGate(ss, m, r, e)
	}
	if !revision.ServedPerRequest(meta.ProtocolVersion) {
		return refuseGate(ss, m, r, unsupportedVersionError(meta.ProtocolVersion))
	}
	if !ss.modernOnly && !ss.servedPerRequest.Load() { // read first: most requests find it set
		ss.servedPerRequest.Store(true)
	}
	// The request's scope from here on, refused or not: its accessors
	// answer for its _meta, and an answer is shaped by it.
	mod := &modernReq{meta: meta}
	r.sc = mod
	md, ok := ss.server.lookupMethod(m.Method)
	if !ok || md.modern == nil || (md.offered != nil && !md.offered(ss)) {
		return refuseGate(ss, m, r, methodNotFound(m.Method))
	}
	mod.cacheable = md.cacheable
	return ss.serveMethod(m, r, &md, md.modern, inputRounds{read: md.modernInput, rule: modernRounds})
}

// notification: a notification that carries the revision's _meta is
// served in the scope of that _meta, whatever the connection's state (the
// revision has no handshake), unless the _meta is not valid or the
// notification is one the revision removed (notifications/initialized,
// notifications/roots/list_changed): those are ignored. Without the _meta
// (on a connection serving only this revision) it is served with no
// request scope.
func (modernEngine) notification(ss *Session, m *jsonrpc.Message) (responder, bool) {
	r := responder{ss: ss, sc: unmarkedScope{ss}}
	switch m.Method {
	case notificationInitialized, notificationRootsListChanged:
		ss.log.Debug("mcp: notification of an earlier revision ignored", logclip.Attr("method", m.Method))
		return r, false
	}
	if !revision.Marked(m.Params) {
		return r, true
	}
	meta, e := parseNotificationMeta(m.Params)
	if e == nil && !revision.ServedPerRequest(meta.ProtocolVersion) {
		e = unsupportedVersionError(meta.ProtocolVersion)
	}
	if e != nil {
		ss.log.Debug("mcp: notification ignored", logclip.Attr("method", m.Method), "error", e.Message)
		return r, false
	}
	r.sc = &modernReq{meta: meta}
	return r, true
}

func (e modernEngine) encode(r *responder, v any) (any, error) {
	mod := r.modern()
	if mod == nil { // a middleware's result for a request refused before its _meta was read
		mod = &modernReq{meta: requestMeta{ProtocolVersion: Version20260728}}
	}
	v = shapeResult(v, mod.meta.ProtocolVersion)
	if tr, ok := v.(*CallToolResult); ok && !mod.cacheable && mod.subscriptionID == nil && tr.Meta[revision.MetaServerInfo] == nil {
		// The common answer, stamped as it is encoded (once, into the
		// message): no encoding to read back.
		mod.stamped = stampedToolResult{Content: tr.Content, StructuredContent: jsontext.Value(tr.StructuredContent), IsError: tr.IsError,
			ResultType: resultTypeComplete, Meta: stampedMeta{Members: tr.Meta, ServerInfo: r.ss.server.serverInfoJSON}}
		return &mod.stamped, nil
	}
	b, ok := v.(jsontext.Value)
	if raw, isRaw := v.(json.RawMessage); isRaw {
		b, ok = jsontext.Value(raw), true
	}
	if !ok {
		var err error
		if b, err = jsonrpc.Marshal(v); err != nil {
			return nil, err
		}
	}
	return r.ss.server.stamp(b, mod)
}

// modernRounds is the inputRule of the 2026-07-28 column: the request's
// inputResponses and requestState are checked (input_rounds.go) and
// handed to the handler as its Input; the handler's need for more input
// is its answer.
func modernRounds(ctx context.Context, req *Request, t inputTarget) (any, error) {
	in, e := req.r.inputFor(ctx, req.Method, t.name, t.args, t.responses, t.state)
	if e != nil {
		return nil, e
	}
	return req.handle(withInput(ctx, in), req)
}

func (modernEngine) inputRequired(r *responder, ir *InputRequiredError) {
	r.modernInputRequired(ir) // input_rounds.go
}

// errorCode: 2026-07-28 answers an unknown resource with -32602 (-32002
// must not be used).
func (modernEngine) errorCode(c int64) int64 {
	if c == CodeResourceNotFound {
		return CodeInvalidParams
	}
	return c
}

// modernToolsCall is tools/call in the 2026-07-28 column of the method
// table: under the rules of the tasks extension (modernTaskRun);
// modernToolsCallInput reads it, with the _meta the request's scope read
// (modernCallMeta) and the extension's task gate (modernTaskGate).
func modernToolsCall(ctx context.Context, req *Request) (any, error) {
	return handleToolsCall(ctx, req, modernTaskRun)
}

func modernToolsCallInput(ctx context.Context, req *Request) (inputTarget, error) {
	return readToolCall(ctx, req, modernCallMeta, modernTaskGate)
}

// modernCallMeta is the metaRule of the 2026-07-28 column: a copy of the
// members of _meta other than the revision's, read with the request's scope
// (requestMeta.Meta), while req.Params are the request's own (no
// middleware replaced them) and every member could be read.
func modernCallMeta(req *Request) (Meta, bool) {
	mod := req.r.modern()
	if mod == nil || mod.meta.partial || !sameValue(jsontext.Value(req.Params), req.r.params) {
		return nil, false
	}
	return maps.Clone(mod.meta.Meta), true // the call's own: a middleware may call next again
}

// modernComplete is completion/complete in the 2026-07-28 column: the
// revision has params.context.
func modernComplete(ctx context.Context, req *Request) (any, error) {
	return handleComplete(ctx, req, true)
}

// modernTaskGate: tasks are an extension in 2026-07-28, which params.task
// does not ask for (rev2026_tasks_serve.go decides, before the call's
// requestState is checked).
func modernTaskGate(ctx context.Context, req *Request, call *ToolCall) *Error {
	call.Task = nil // tasks are an extension in 2026-07-28: params.task is ignored
	if req.Session.server.tasks == nil {
		return nil
	}
	return req.Session.server.tasks.modernTaskGate(req.Session, ctx, req, call) // rev2026_tasks_serve.go
}

// modernTaskRun runs a tools/call modernTaskGate put on the task path: it
// may become a task (rev2026_tasks_serve.go).
func modernTaskRun(ctx context.Context, req *Request, call *ToolCall) (any, error) {
	return req.Session.server.tasks.modernTaskCall(req.Session, ctx, req, call) // rev2026_tasks_serve.go
}

// resultNotObjectError refuses a result that is not a JSON object (nor
// null, which stands for an empty one) on a 2026-07-28 request, whose
// results are objects that carry resultType.
type resultNotObjectError struct{ kind jsontext.Kind }

func (e *resultNotObjectError) Error() string {
	what := map[jsontext.Kind]string{'[': "a JSON array", '"': "a JSON string", '0': "a JSON number", 't': "a JSON boolean", 'f': "a JSON boolean"}[e.kind]
	if what == "" {
		what = "not a JSON object"
	}
	return "the result is " + what + ", and a result of revision " + Version20260728 + " must be a JSON object (it carries resultType)"
}

// stamp returns the wire form of a modern result from its encoding b,
// read once: b's members plus resultType ("complete" unless b has one),
// the caching hints of a cacheable complete result, and serverInfo in
// _meta. A subscription's final answer also names its subscriptionId.
func (s *Server) stamp(b []byte, mod *modernReq) (jsontext.Value, error) {
	if k := jsontext.Value(bytes.TrimSpace(b)).Kind(); k != '{' && k != 'n' {
		return nil, &resultNotObjectError{kind: k}
	}
	out := make([]byte, 0, len(b)+len(s.serverInfoJSON)+96)
	out = append(out, '{')
	var meta jsontext.Value
	hasType, complete, hasTTL, hasScope := false, true, false, false
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		err := jsonrpc.WithDecoder(b, func(dec *jsontext.Decoder) error {
			if _, err := dec.ReadToken(); err != nil { // {
				return err
			}
			for dec.PeekKind() != '}' {
				start := dec.InputOffset()
				name, err := dec.ReadValue()
				if err != nil {
					return err
				}
				isMeta := nameIs(name, "_meta")
				isType := !isMeta && nameIs(name, "resultType")
				isTTL := !isMeta && !isType && nameIs(name, "ttlMs")
				isScope := !isMeta && !isType && !isTTL && nameIs(name, "cacheScope")
				val, err := dec.ReadValue()
				if err != nil {
					return err
				}
				switch {
				case isMeta:
					meta = val.Clone()
					continue
				case isType:
					hasType, complete = true, string(val) == `"`+resultTypeComplete+`"`
				case isTTL:
					hasTTL = true
				case isScope:
					hasScope = true
				}
				if len(out) > 1 {
					out = append(out, ',')
				}
				out = append(out, bytes.TrimLeft(b[start:dec.InputOffset()], " \t\r\n,")...)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) > 1 {
		out = append(out, ',')
	}
	if !hasType {
		out = append(out, `"resultType":"`+resultTypeComplete+`",`...)
	}
	if mod.cacheable && complete {
		if !hasTTL {
			out = strconv.AppendInt(append(out, `"ttlMs":`...), s.opts.CacheTTL.Milliseconds(), 10)
			out = append(out, ',')
		}
		if !hasScope {
			out = append(out, `"cacheScope":"`+s.opts.CacheScope+`",`...)
		}
	}
	out = append(out, `"_meta":`...)
	if meta == nil {
		out = append(out, `{"`+revision.MetaServerInfo+`":`...)
		out = append(out, s.serverInfoJSON...)
		if mod.subscriptionID != nil {
			out = append(out, `,"`+revision.MetaSubscriptionID+`":`...)
			out = append(out, mod.subscriptionID...)
		}
		out = append(out, '}')
	} else {
		members := map[string]jsontext.Value{}
		if err := jsonv2.Unmarshal(meta, &members); err != nil || members == nil {
			members = map[string]jsontext.Value{}
		}
		if _, ok := members[revision.MetaServerInfo]; !ok {
			members[revision.MetaServerInfo] = s.serverInfoJSON
		}
		if mod.subscriptionID != nil {
			members[revision.MetaSubscriptionID] = mod.subscriptionID
		}
		mb, err := jsonv2.Marshal(members, jsonv2.Deterministic(true))
		if err != nil {
			return nil, err
		}
		out = append(out, mb...)
	}
	return append(out, '}'), nil
}

// stampedToolResult is a CallToolResult in its 2026-07-28 form: with
// resultType, and serverInfo in _meta beside the result's own members.
type stampedToolResult struct {
	Content           []Content      `json:"content"`
	StructuredContent jsontext.Value `json:"structuredContent,omitzero"`
	IsError           bool           `json:"isError,omitzero"`
	ResultType        string         `json:"resultType"`
	Meta              stampedMeta    `json:"_meta"`
}

type stampedMeta struct {
	Members    Meta           `json:",inline"`
	ServerInfo jsontext.Value `json:"io.modelcontextprotocol/serverInfo"`
}
