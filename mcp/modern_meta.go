package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// modernReq is the per-request scope of a 2026-07-28 request: what its
// _meta declared. Nothing in it comes from the session or an earlier
// request.
type modernReq struct {
	meta      RequestMeta
	cacheable bool
	// bind is what an input-required answer's requestState is bound to
	// (set by the method before its handler runs; input_serve.go).
	bind     sealedState
	bound    bool           // bind is set
	bindArgs jsontext.Value // the arguments bind's digest is of (computed when needed)
	// subscriptionID is the listen request's id on answers to it.
	subscriptionID jsontext.Value
	// stamped is the wire form of a tools/call result (encode), kept here
	// so that it needs no allocation of its own.
	stamped stampedToolResult
}

var metaProtocolVersionKey = []byte(`"` + MetaProtocolVersion + `"`)

// IsModernRequest reports whether a request's (or notification's) params
// carry _meta["io.modelcontextprotocol/protocolVersion"]: the mark of a
// message of revision 2026-07-28 or later, served per request (transports
// use it to classify a message before they route it). Legacy messages pay
// one bytes.Contains.
func IsModernRequest(params json.RawMessage) bool {
	if !bytes.Contains(params, metaProtocolVersionKey) {
		return false
	}
	if jsontext.Value(params).Kind() != '{' {
		return true // malformed params that name the key: the modern rules answer -32602
	}
	// Any error — errNamed, or malformed params that name the key, which
	// the modern rules answer with -32602 — makes the request modern.
	return scanMetaMembers(jsontext.Value(params), func(dec *jsontext.Decoder, member int, _ jsontext.Value) error {
		if member == memberVersion {
			return errNamed
		}
		return dec.SkipValue()
	}) != nil
}

// errNamed stops IsModernRequest's reading at the protocolVersion member.
var errNamed = errors.New("mcp: _meta names the protocol version")

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

// ParseRequestMeta decodes and checks the _meta of a 2026-07-28 request's
// params: protocolVersion and clientCapabilities are required, logLevel
// must be a known level. The error is the -32602 to answer. Transports use
// it to check a request before they dispatch it.
func ParseRequestMeta(params json.RawMessage) (RequestMeta, *Error) {
	if jsontext.Value(params).Kind() != '{' {
		return RequestMeta{}, errNoModernParams
	}
	var w requestMetaWire
	return w.check(decodeMeta(jsontext.Value(params), &w))
}

// ClassifyRequest is IsModernRequest and, for a modern request,
// ParseRequestMeta, reading params once where IsModernRequest alone would
// read them: the hand-off of a request to its era's rules. When modern is
// false, meta and e are zero.
func ClassifyRequest(params json.RawMessage) (modern bool, meta RequestMeta, e *Error) {
	if !bytes.Contains(params, metaProtocolVersionKey) {
		return false, meta, nil
	}
	if jsontext.Value(params).Kind() != '{' {
		return true, meta, errNoModernParams
	}
	var w requestMetaWire
	err := decodeMeta(jsontext.Value(params), &w)
	switch {
	case w.namedVersion:
	case err == nil:
		return false, meta, nil // the key is elsewhere than in _meta
	case !IsModernRequest(params):
		return false, meta, nil // malformed, but not where the era is named
	}
	meta, e = w.check(err)
	return true, meta, e
}

// check applies the rules of ParseRequestMeta to w, decoded with error
// err.
func (w *requestMetaWire) check(err error) (RequestMeta, *Error) {
	var rm RequestMeta
	if err != nil {
		return rm, invalidParams(err)
	}
	switch {
	case !w.hasVersion:
		return rm, missingMeta(MetaProtocolVersion)
	case !w.hasCaps:
		return rm, missingMeta(MetaClientCapabilities)
	case w.hasLevel && !w.LogLevel.Valid():
		return rm, &Error{Code: CodeInvalidParams, Message: "Invalid params: unknown logging level " + quote(string(w.LogLevel)) +
			" in _meta[" + strconv.Quote(MetaLogLevel) + "]"}
	}
	return RequestMeta{ProtocolVersion: w.ProtocolVersion, ClientCapabilities: w.ClientCapabilities,
		ClientInfo: w.ClientInfo, LogLevel: w.LogLevel, ProgressToken: w.ProgressToken, Meta: w.Meta, partial: w.partial}, nil
}

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
		return req.r.mod
	}
	return nil
}

// ProtocolVersionFromContext returns the protocol revision of the request
// ctx belongs to: the request's own for a 2026-07-28 request, else the
// session's negotiated one ("" outside a Server).
func ProtocolVersionFromContext(ctx context.Context) string {
	if m := modernFromContext(ctx); m != nil {
		return m.meta.ProtocolVersion
	}
	if ss := SessionFromContext(ctx); ss != nil {
		return ss.ProtocolVersion()
	}
	return ""
}

// ClientCapabilitiesFromContext returns the client capabilities that apply
// to the request ctx belongs to: those the request declared in its _meta
// (2026-07-28), else those the session's client declared in initialize.
func ClientCapabilitiesFromContext(ctx context.Context) ClientCapabilities {
	if m := modernFromContext(ctx); m != nil {
		return m.meta.ClientCapabilities
	}
	if ss := SessionFromContext(ctx); ss != nil {
		return ss.ClientCapabilities()
	}
	return ClientCapabilities{}
}

// ErrNoClientRequests is matched (errors.Is) by the error of a
// server-to-client request (Session.CreateMessage, Elicit, ListRoots, Ping)
// made while serving a request of revision 2026-07-28: that revision has no
// server-to-client requests. The handler returns what it needs instead,
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
	s.declareFeatures(Version20260728, &caps) // resources, prompts, completions
	if o.Logging {
		caps.Logging = &struct{}{}
	}
	if s.tasks != nil && o.Tools != nil {
		caps.Extensions = tasksExtension() // tasks_modern.go
	}
	s.declareCustom(&caps, true)
	return caps
}

// nameIs reports whether raw, an object member name read as a JSON string,
// is want; it allocates only for a name with escapes.
func nameIs(raw jsontext.Value, want string) bool {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == want
	}
	var s string
	return jsonv2.Unmarshal(raw, &s) == nil && s == want
}

// CheckRequestMeta checks what every 2026-07-28 request's params must
// carry — an object with a _meta naming the revision (a string) and the
// client capabilities (an object) — and returns the revision named; the
// error is the -32602 to answer. It leaves the rest unchecked (a bad
// logLevel, for instance, is the server's to refuse), so a transport calls
// it to check a request before it routes it; ParseRequestMeta applies the
// same rules and decodes the members: when it succeeds, CheckRequestMeta
// returns its ProtocolVersion and no error.
func CheckRequestMeta(params json.RawMessage) (string, *Error) {
	if jsontext.Value(params).Kind() != '{' {
		return "", errNoModernParams
	}
	version, hasVersion, hasCaps := "", false, false
	err := scanMetaMembers(jsontext.Value(params), func(dec *jsontext.Decoder, member int, _ jsontext.Value) (err error) {
		switch kind := dec.PeekKind(); {
		case member == memberVersion && kind == '"':
			version, err = decodeInterned(dec, knownVersions)
			hasVersion = err == nil
		case member == memberCaps && kind == '{':
			hasCaps = true
			err = dec.SkipValue()
		default:
			err = dec.SkipValue()
		}
		return err
	})
	switch {
	case err != nil:
		return "", invalidParams(err)
	case !hasVersion:
		return "", missingMeta(MetaProtocolVersion)
	case !hasCaps:
		return "", missingMeta(MetaClientCapabilities)
	}
	return version, nil
}

// errNoModernParams refuses a 2026-07-28 request without params.
var errNoModernParams = &Error{Code: CodeInvalidParams, Message: "Invalid params: a " + Version20260728 + " request needs params with _meta"}

// missingMeta is the -32602 of a required _meta member that is absent or
// malformed.
func missingMeta(key string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "Invalid params: _meta[" + strconv.Quote(key) + "] is required"}
}

// decodeMeta decodes the _meta member of params (an object) into *w,
// reading past the other members without decoding them; nothing is
// present when there is no _meta, or it is null. Errors name their place
// from the root of params. The members are read one by one, into values
// (no allocation for what needs none), the usual strings interned.
func decodeMeta(params jsontext.Value, w *requestMetaWire) error {
	return scanMetaMembers(params, func(dec *jsontext.Decoder, member int, name jsontext.Value) (err error) {
		w.namedVersion = w.namedVersion || member == memberVersion
		switch {
		case member == memberProgressToken:
			var raw jsontext.Value
			if raw, err = dec.ReadValue(); err == nil {
				w.ProgressToken = json.RawMessage(raw.Clone())
				w.addOther(MetaProgressToken, raw)
			}
		case member == memberOther:
			var key string
			if err = jsonv2.Unmarshal(name, &key); err == nil { // name first: the read below invalidates it
				var raw jsontext.Value
				if raw, err = dec.ReadValue(); err == nil {
					w.addOther(key, raw)
				}
			}
		case dec.PeekKind() == 'n': // a null member of the revision is an absent one
			err = dec.SkipValue()
		case member == memberVersion:
			w.hasVersion = true
			w.ProtocolVersion, err = decodeInterned(dec, knownVersions)
		case member == memberCaps:
			w.hasCaps = true
			w.ClientCapabilities, err = decodeCaps(dec, params)
		case member == memberInfo:
			w.ClientInfo = new(Implementation)
			err = jsonv2.UnmarshalDecode(dec, w.ClientInfo)
		case member == memberLevel:
			w.hasLevel = true
			var l string
			l, err = decodeInterned(dec, knownLevels)
			w.LogLevel = LoggingLevel(l)
		}
		return err
	})
}

// addOther records the member key of _meta in w.Meta, raw decoded as an
// any. A value no any holds (a number beyond float64) is not an error of
// the request's _meta, which the revision's rules judge: Meta is then
// left partial (RequestMeta.partial), and tools/call, whose ToolCall.Meta
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

// scanMetaMembers calls read for each member of params' _meta (an
// object; null or absent: none), with the decoder at the member's value,
// which read must consume, the member's kind (metaMemberOf) and its name
// as read (valid only until the decoder reads or peeks again). A _meta
// that is neither gets the error an object's decoding gives.
func scanMetaMembers(params jsontext.Value, read func(dec *jsontext.Decoder, member int, name jsontext.Value) error) error {
	return scanMeta(params, func(dec *jsontext.Decoder) error {
		switch dec.PeekKind() {
		case 'n':
			return dec.SkipValue()
		case '{':
		default:
			var obj *struct{}
			return jsonv2.UnmarshalDecode(dec, &obj)
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if err := read(dec, metaMemberOf(name), name); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken() // }
		return err
	})
}

// The members of _meta that decodeMeta reads.
const (
	memberOther = iota
	memberVersion
	memberCaps
	memberInfo
	memberLevel
	memberProgressToken
)

func metaMemberOf(name jsontext.Value) int {
	switch {
	case nameIs(name, MetaProtocolVersion):
		return memberVersion
	case nameIs(name, MetaClientCapabilities):
		return memberCaps
	case nameIs(name, MetaClientInfo):
		return memberInfo
	case nameIs(name, MetaLogLevel):
		return memberLevel
	case nameIs(name, "progressToken"):
		return memberProgressToken
	}
	return memberOther
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

// decodeInterned decodes a string, without allocating when it is one of
// known (as written, without escapes).
func decodeInterned(dec *jsontext.Decoder, known []string) (string, error) {
	if dec.PeekKind() != '"' {
		return decodeString(dec) // the error a string's decoding gives
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return "", err
	}
	for _, k := range known {
		if len(raw) == len(k)+2 && string(raw[1:len(raw)-1]) == k {
			return k, nil
		}
	}
	return decodeString(jsontext.NewDecoder(bytes.NewReader(raw)))
}

func decodeString(dec *jsontext.Decoder) (string, error) {
	var s string
	err := jsonv2.UnmarshalDecode(dec, &s)
	return s, err
}

var (
	knownVersions = []string{Version20260728, Version20251125, Version20250618, Version20250326, Version20241105}
	knownLevels   = []string{string(LoggingLevelDebug), string(LoggingLevelInfo), string(LoggingLevelNotice), string(LoggingLevelWarning),
		string(LoggingLevelError), string(LoggingLevelCritical), string(LoggingLevelAlert), string(LoggingLevelEmergency)}
)

// scanMeta calls decode with a decoder at the value of params' _meta
// member, if there is one, reading past the other members.
func scanMeta(params jsontext.Value, decode func(*jsontext.Decoder) error) error {
	return jsonrpc.WithDecoder(params, func(dec *jsontext.Decoder) error {
		if _, err := dec.ReadToken(); err != nil { // {: the caller checked the kind
			return err
		}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if !nameIs(name, "_meta") {
				if err := dec.SkipValue(); err != nil {
					return err
				}
				continue
			}
			return decode(dec)
		}
		return nil
	})
}
