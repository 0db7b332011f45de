package mcp

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/go-json-experiment/json"
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
	bind *sealedState
	// subscriptionID is the listen request's id on answers to it.
	subscriptionID jsontext.Value
}

var metaProtocolVersionKey = []byte(`"` + MetaProtocolVersion + `"`)

// isModernRequest reports whether params carry
// _meta["io.modelcontextprotocol/protocolVersion"]: the era test of a
// request that arrives without an HTTP header saying so. Legacy requests pay
// one bytes.Contains.
func isModernRequest(params jsontext.Value) bool {
	if !bytes.Contains(params, metaProtocolVersionKey) {
		return false
	}
	var p struct {
		Meta map[string]jsontext.Value `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return true // malformed: the modern rules answer -32602
	}
	_, ok := p.Meta[MetaProtocolVersion]
	return ok
}

// requestMetaWire is the wire form of a modern request's _meta.
type requestMetaWire struct {
	ProtocolVersion    *string             `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities *ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         *Implementation     `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           *LoggingLevel       `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      jsontext.Value      `json:"progressToken"`
}

// ParseRequestMeta decodes and checks the _meta of a 2026-07-28 request's
// params: protocolVersion and clientCapabilities are required, logLevel
// must be a known level. The error is the -32602 to answer. Transports use
// it to check a request before they dispatch it.
func ParseRequestMeta(params jsontext.Value) (RequestMeta, *Error) {
	var rm RequestMeta
	if params.Kind() != '{' {
		return rm, &Error{Code: CodeInvalidParams, Message: "Invalid params: a " + Version20260728 + " request needs params with _meta"}
	}
	var p struct {
		Meta *requestMetaWire `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return rm, invalidParams(err)
	}
	missing := func(key string) (RequestMeta, *Error) {
		return rm, &Error{Code: CodeInvalidParams, Message: "Invalid params: _meta[" + strconv.Quote(key) + "] is required"}
	}
	switch {
	case p.Meta == nil || p.Meta.ProtocolVersion == nil:
		return missing(MetaProtocolVersion)
	case p.Meta.ClientCapabilities == nil:
		return missing(MetaClientCapabilities)
	}
	rm.ProtocolVersion = *p.Meta.ProtocolVersion
	rm.ClientCapabilities = *p.Meta.ClientCapabilities
	rm.ClientInfo = p.Meta.ClientInfo
	if l := p.Meta.LogLevel; l != nil {
		if !l.Valid() {
			return rm, &Error{Code: CodeInvalidParams, Message: "Invalid params: unknown logging level " + quote(string(*l)) +
				" in _meta[" + strconv.Quote(MetaLogLevel) + "]"}
		}
		rm.LogLevel = *l
	}
	rm.ProgressToken = p.Meta.ProgressToken
	return rm, nil
}

// handleModern serves a 2026-07-28 request statelessly from its own _meta,
// whatever the session's state: checks in the order the specification
// gives (_meta -32602, version -32022, method -32601), then the method.
func (ss *Session) handleModern(m *jsonrpc.Message, r responder) func() {
	meta, e := ParseRequestMeta(m.Params)
	if e != nil {
		r.error(e)
		return nil
	}
	if !IsModernVersion(meta.ProtocolVersion) {
		r.error(UnsupportedVersionError(meta.ProtocolVersion))
		return nil
	}
	md, ok := ss.server.lookupMethod(m.Method)
	if !ok || md.eras&eraModern == 0 || (md.offered != nil && !md.offered(ss)) {
		r.error(methodNotFound(m.Method))
		return nil
	}
	r.mod = &modernReq{meta: meta}
	return ss.serveMethod(m, r, &md)
}

type modernKey struct{}

// context returns the context of the request r answers: parent with the
// session and, for a modern request, its per-request scope.
func (r responder) context(parent context.Context) context.Context {
	ctx := r.ss.requestContext(parent)
	if r.mod != nil {
		ctx = context.WithValue(ctx, modernKey{}, r.mod)
	}
	return ctx
}

func modernFromContext(ctx context.Context) *modernReq {
	if req, ok := ctx.Value(requestKey{}).(*Request); ok {
		return req.r.mod
	}
	m, _ := ctx.Value(modernKey{}).(*modernReq)
	return m
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

// errModernNoRequests refuses a server-to-client request from a modern
// request's handler: revision 2026-07-28 has none.
var errModernNoRequests = errors.New("mcp: a " + Version20260728 +
	" request cannot send requests to the client; return mcp.InputRequired(...) instead")

// version returns the revision r's request is served at.
func (r responder) version() string {
	if r.mod != nil {
		return r.mod.meta.ProtocolVersion
	}
	return r.ss.ProtocolVersion()
}

// serverInfo is the Implementation a result's _meta names (2026-07-28).
func (s *Server) serverInfo() Implementation {
	o := &s.opts
	return Implementation{Name: o.Name, Version: o.Version, Title: o.Title, Description: o.Description, WebsiteURL: o.WebsiteURL, Icons: o.Icons}
}

// stamp returns the wire form of a modern result: v's members plus
// resultType ("complete" unless v has one), the caching hints of a
// cacheable complete result, and serverInfo in _meta. A subscription's
// final answer also names its subscriptionId.
func (r responder) stamp(v any) (jsontext.Value, error) {
	b, ok := v.(jsontext.Value)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	var members map[string]jsontext.Value
	if err := json.Unmarshal(b, &members); err != nil || members == nil {
		members = map[string]jsontext.Value{}
	}
	if _, ok := members["resultType"]; !ok {
		members["resultType"] = jsontext.Value(`"` + ResultTypeComplete + `"`)
	}
	if r.mod.cacheable && string(members["resultType"]) == `"`+ResultTypeComplete+`"` {
		o := &r.ss.server.opts
		if _, ok := members["ttlMs"]; !ok {
			members["ttlMs"] = jsontext.Value(strconv.FormatInt(o.CacheTTL.Milliseconds(), 10))
		}
		if _, ok := members["cacheScope"]; !ok {
			members["cacheScope"] = jsontext.Value(`"` + o.CacheScope + `"`)
		}
	}
	var meta map[string]any
	if raw, ok := members["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	if _, ok := meta[MetaServerInfo]; !ok {
		meta[MetaServerInfo] = r.ss.server.serverInfo()
	}
	if r.mod.subscriptionID != nil {
		meta[MetaSubscriptionID] = r.mod.subscriptionID
	}
	mb, err := json.Marshal(meta, json.Deterministic(true))
	if err != nil {
		return nil, err
	}
	members["_meta"] = mb
	return json.Marshal(members, json.Deterministic(true))
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
