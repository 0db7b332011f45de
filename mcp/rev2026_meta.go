package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// modernReq is the per-request scope of a 2026-07-28 request (a scope):
// what its _meta declared. Nothing in it comes from the session or an earlier
// request.
type modernReq struct {
	meta      requestMeta
	cacheable bool
	// bind is what an input-required answer's requestState is bound to
	// (set by the method before its handler runs; input_rounds.go).
	bind     sealedState
	bound    bool           // bind is set
	bindArgs jsontext.Value // the arguments bind's digest is of (computed when needed)
	// subscriptionID is the listen request's id on answers to it.
	subscriptionID jsontext.Value
	// stamped is the wire form of a tools/call result (encode), kept here
	// so that it needs no allocation of its own.
	stamped stampedToolResult
}

// requestMetaWire is a modern request's _meta as read (decodeMeta): the
// members keel reads, with their presence.
type requestMetaWire struct {
	hasVersion, hasCaps, hasLevel bool
	namedVersion                  bool // the protocolVersion member is there (even null)
	ProtocolVersion               string
	ClientCapabilities            ClientCapabilities
	ClientInfo                    *Implementation
	LogLevel                      LoggingLevel
	ProgressToken                 json.RawMessage
	Meta                          Meta
	partial                       bool // a member of Meta could not be decoded (addOther)
}

// parseRequestMeta decodes and checks the _meta of a 2026-07-28 request's
// params: protocolVersion and clientCapabilities are required, logLevel
// must be a known level. The error is the -32602 to answer.
func parseRequestMeta(params jsontext.Value) (requestMeta, *Error) {
	if params.Kind() != '{' {
		return requestMeta{}, refused(revision.NoParams)
	}
	var w requestMetaWire
	return w.check(decodeMeta(jsontext.Value(params), &w))
}

// parseNotificationMeta decodes and checks the _meta of a 2026-07-28
// notification's params (the schema's NotificationMetaObject): as
// parseRequestMeta, except that clientCapabilities, a member of a
// request's _meta only, is not required (notifications/cancelled and
// notifications/progress of a 2026-07-28 client carry none).
func parseNotificationMeta(params jsontext.Value) (requestMeta, *Error) {
	if params.Kind() != '{' {
		return requestMeta{}, refused(revision.NoParams)
	}
	var w requestMetaWire
	err := decodeMeta(jsontext.Value(params), &w)
	w.hasCaps = true // optional here: an absent one is the empty set
	return w.check(err)
}

// classifyRequest is revision.Classify and, for a marked request, its
// _meta as parseRequestMeta reads it (requestMetaOf): the hand-off of a
// request to its era's rules. When modern is false, meta and e are zero.
func classifyRequest(params jsontext.Value, infos *clientInfoCache) (modern bool, meta requestMeta, e *Error) {
	rd := revision.Classify(params)
	if !rd.Marked {
		return false, meta, nil
	}
	meta, e = requestMetaOf(params, &rd, infos)
	return true, meta, e
}

// requestMetaOf is parseRequestMeta(params), given rd, the classifier's
// reading of them (marked): the typed members are decoded from the values
// rd located, and params are read again only when rd is not all it takes
// (rd.Slow, a refusal, or a member whose type is wrong), so that the
// errors are parseRequestMeta's own.
func requestMetaOf(params jsontext.Value, rd *revision.Reading, infos *clientInfoCache) (requestMeta, *Error) {
	if rd.Refusal != nil || rd.Slow {
		return parseRequestMeta(params)
	}
	w := requestMetaWire{hasVersion: true, hasCaps: true, hasLevel: rd.Level != 0, ProtocolVersion: rd.Version, LogLevel: LoggingLevel(rd.LevelName())}
	if caps := rd.Caps.In(params); string(caps) != "{}" {
		var err error
		if w.ClientCapabilities, err = decodeCapabilities(caps); err != nil {
			return parseRequestMeta(params)
		}
	}
	if info := rd.Info.In(params); info != nil {
		var err error
		if w.ClientInfo, err = infos.decode(info); err != nil {
			return parseRequestMeta(params)
		}
	}
	return w.check(nil)
}

// clientInfoCache holds the clientInfo values of 2026-07-28 requests as
// decoded, by their bytes: a client names itself alike in every request,
// and decoding the value is a good part of reading _meta. A value is kept
// only when it is small and has no icons, so that it holds strings only
// (a copy handed to a handler, Request.ClientInfo, shares nothing it could
// change), and at most maxClientInfos of them are kept (the cache is
// emptied when full: values a peer invents cost the cache, never memory).
// The zero cache is ready; a nil one decodes every value.
type clientInfoCache struct {
	mu sync.RWMutex
	m  map[string]*Implementation
}

// The bounds of a clientInfoCache: how many values, and how many bytes
// each (as sent).
const (
	maxClientInfos     = 64
	maxClientInfoBytes = 512
)

// decode returns the value raw, a clientInfo as sent, decodes to; the
// value must not be changed.
func (c *clientInfoCache) decode(raw jsontext.Value) (*Implementation, error) {
	cacheable := c != nil && len(raw) <= maxClientInfoBytes
	if cacheable {
		c.mu.RLock()
		ci := c.m[string(raw)]
		c.mu.RUnlock()
		if ci != nil {
			return ci, nil
		}
	}
	ci := new(Implementation)
	if err := jsonrpc.Unmarshal(raw, ci); err != nil {
		return nil, err
	}
	if cacheable && ci.Icons == nil {
		c.mu.Lock()
		if len(c.m) >= maxClientInfos {
			clear(c.m)
		}
		if c.m == nil {
			c.m = make(map[string]*Implementation, maxClientInfos)
		}
		c.m[string(raw)] = ci
		c.mu.Unlock()
	}
	return ci, nil
}

// decodeCapabilities decodes a _meta's clientCapabilities (apart from
// requestMetaOf, so that its requestMetaWire stays on the stack when the
// capabilities are empty).
func decodeCapabilities(v jsontext.Value) (ClientCapabilities, error) {
	var caps ClientCapabilities
	err := jsonrpc.Unmarshal(v, &caps)
	return caps, err
}

// check applies the rules of parseRequestMeta to w, decoded with error
// err.
func (w *requestMetaWire) check(err error) (requestMeta, *Error) {
	var rm requestMeta
	if err != nil {
		return rm, invalidParams(err)
	}
	switch {
	case !w.hasVersion:
		return rm, refused(revision.MissingMeta(revision.MetaProtocolVersion))
	case !w.hasCaps:
		return rm, refused(revision.MissingMeta(revision.MetaClientCapabilities))
	case w.hasLevel && !w.LogLevel.Valid():
		return rm, &Error{Code: CodeInvalidParams, Message: "Invalid params: unknown logging level " + quote(string(w.LogLevel)) +
			" in _meta[" + strconv.Quote(revision.MetaLogLevel) + "]"}
	}
	return requestMeta{ProtocolVersion: w.ProtocolVersion, ClientCapabilities: w.ClientCapabilities,
		ClientInfo: w.ClientInfo, LogLevel: w.LogLevel, ProgressToken: w.ProgressToken, Meta: w.Meta, partial: w.partial}, nil
}

func (m *modernReq) engine() engine  { return modernEngine{} }
func (m *modernReq) version() string { return m.meta.ProtocolVersion }

// clientInfo is what the request's _meta names as its client (zero when
// nothing).
func (m *modernReq) clientInfo() Implementation {
	if m.meta.ClientInfo != nil {
		return *m.meta.ClientInfo
	}
	return Implementation{}
}

func modernFromContext(ctx context.Context) *modernReq {
	if req, ok := ctx.Value(requestKey{}).(*Request); ok {
		return req.r.modern()
	}
	return nil
}

// protocolVersionFromContext returns the protocol revision of the request
// ctx belongs to: the request's own for a 2026-07-28 request, else the
// session's negotiated one ("" outside a Server).
func protocolVersionFromContext(ctx context.Context) string {
	if req, ok := ctx.Value(requestKey{}).(*Request); ok {
		return req.ProtocolVersion()
	}
	if ss := SessionFromContext(ctx); ss != nil {
		return ss.negotiated()
	}
	return ""
}

// ErrNoClientRequests is matched (errors.Is) by the error of a
// server-to-client request (Session.CreateMessage, Elicit, ListRoots, Ping)
// made while serving a request of revision 2026-07-28, or on a connection
// whose ProtocolVersion is that revision: it has no server-to-client
// requests. The handler returns what it needs instead,
// with mcp.InputRequired and mcp.ElicitInput, mcp.SamplingInput or
// mcp.RootsInput; the client answers and calls again (on a 2025 session
// keel makes the request itself and runs the handler again).
var ErrNoClientRequests = errors.New("mcp: revision " + Version20260728 +
	" has no server-to-client requests: return mcp.InputRequired(...) with mcp.ElicitInput, mcp.SamplingInput or mcp.RootsInput instead")

// serverInfo is the Implementation a result's _meta names (2026-07-28).
func (s *Server) serverInfo() Implementation {
	o := &s.opts
	return Implementation{Name: o.Name, Version: o.Version, Title: o.Title, Description: o.Description, WebsiteURL: o.WebsiteURL, Icons: o.Icons}
}

// handleDiscover serves server/discover.
func handleDiscover(_ context.Context, req *Request) (any, error) {
	s := req.Session.server
	return &DiscoverResult{SupportedVersions: AllVersions(), Capabilities: s.modernCapabilities(), Instructions: s.opts.Instructions}, nil
}

// modernCapabilities are the capabilities server/discover advertises: only
// what the server serves to modern requests.
func (s *Server) modernCapabilities() ServerCapabilities {
	var caps ServerCapabilities
	o := &s.opts
	if o.Tools != nil {
		caps.Tools = &ListChangedCapability{ListChanged: s.hub.watch&listTools != 0}
	}
	s.declareFeatures(&caps) // resources, prompts, completions
	if o.Logging {
		caps.Logging = &struct{}{}
	}
	if s.tasks != nil && o.Tools != nil {
		caps.Extensions = tasksExtension() // rev2026_tasks.go
	}
	s.declareCustom(&caps, true)
	return caps
}

// nameIs reports whether raw, an object member name read as a JSON string,
// is want (revision.NameIs).
func nameIs(raw jsontext.Value, want string) bool { return revision.NameIs(raw, want) }

// refused is the protocol error of a revision's refusal.
func refused(r *revision.Refusal) *Error { return &Error{Code: r.Code, Message: r.Message} }

// decodeMeta decodes the _meta member of params (an object) into *w,
// reading past the other members without decoding them; nothing is
// present when there is no _meta, or it is null. Errors name their place
// from the root of params. The members are read one by one, into values
// (no allocation for what needs none), the usual strings interned.
func decodeMeta(params jsontext.Value, w *requestMetaWire) error {
	return revision.ScanMetaMembers(params, func(dec *jsontext.Decoder, member revision.Member, name jsontext.Value) (err error) {
		w.namedVersion = w.namedVersion || member == revision.MemberVersion
		switch {
		case member == revision.MemberProgressToken:
			var raw jsontext.Value
			if raw, err = dec.ReadValue(); err == nil {
				w.ProgressToken = json.RawMessage(raw.Clone())
				w.addOther(MetaProgressToken, raw)
			}
		case member == revision.MemberOther:
			var key string
			if err = jsonv2.Unmarshal(name, &key); err == nil { // name first: the read below invalidates it
				var raw jsontext.Value
				if raw, err = dec.ReadValue(); err == nil {
					w.addOther(key, raw)
				}
			}
		case dec.PeekKind() == 'n': // a null member of the revision is an absent one
			err = dec.SkipValue()
		case member == revision.MemberVersion:
			w.hasVersion = true
			w.ProtocolVersion, err = revision.DecodeInterned(dec, revision.KnownVersions)
		case member == revision.MemberCaps:
			w.hasCaps = true
			w.ClientCapabilities, err = decodeCaps(dec, params)
		case member == revision.MemberInfo:
			w.ClientInfo = new(Implementation)
			err = jsonv2.UnmarshalDecode(dec, w.ClientInfo)
		case member == revision.MemberLevel:
			w.hasLevel = true
			var l string
			l, err = revision.DecodeInterned(dec, revision.KnownLevels)
			w.LogLevel = LoggingLevel(l)
		}
		return err
	})
}

// addOther records the member key of _meta in w.Meta, raw decoded as an
// any. A value no any holds (a number beyond float64) is not an error of
// the request's _meta, which the revision's rules judge: Meta is then
// left partial (requestMeta.partial), and tools/call, whose ToolCall.Meta
// it is, reads _meta itself and answers what a 2025 request would get.
func (w *requestMetaWire) addOther(key string, raw jsontext.Value) {
	var v any
	if err := jsonv2.Unmarshal(raw, &v); err != nil {
		w.partial = true
		return
	}
	setMeta(&w.Meta, key, v)
}

// decodeMetaMember decodes the member of a _meta dec is at into *m, as an
// any. name is the member's name as read (valid until dec reads or peeks
// again: it is unquoted first). Decoding apart from the loop over the
// members keeps the members a loop skips free of allocations.
func decodeMetaMember(dec *jsontext.Decoder, name jsontext.Value, m *Meta) error {
	var key string
	if err := jsonv2.Unmarshal(name, &key); err != nil {
		return err
	}
	var v any
	if err := jsonv2.UnmarshalDecode(dec, &v); err != nil {
		return err
	}
	setMeta(m, key, v)
	return nil
}

// setMeta sets key in *m, making the map on first use.
func setMeta(m *Meta, key string, v any) {
	if *m == nil {
		*m = Meta{}
	}
	(*m)[key] = v
}

// decodeCaps decodes client capabilities from dec, reading params; none
// ({}) allocates nothing.
func decodeCaps(dec *jsontext.Decoder, params []byte) (ClientCapabilities, error) {
	if rest := bytes.TrimLeft(params[dec.InputOffset():], " \t\r\n:"); bytes.HasPrefix(rest, []byte("{}")) {
		return ClientCapabilities{}, dec.SkipValue()
	}
	var caps ClientCapabilities
	err := jsonv2.UnmarshalDecode(dec, &caps)
	return caps, err
}
