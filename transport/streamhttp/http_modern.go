package streamhttp

import (
	"bytes"
	"encoding/base64"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
)

// Vocabulary of revision 2026-07-28 ("modern", stateless), from package mcp.
const (
	modernVersion          = revision.V20260728
	metaProtocolVersion    = revision.MetaProtocolVersion
	metaClientCapabilities = revision.MetaClientCapabilities

	codeHeaderMismatch = revision.CodeHeaderMismatch

	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"

	methodListen = "subscriptions/listen"
)

// isModernHeader reports whether an MCP-Protocol-Version header value
// names a modern revision (revision.PerRequest: an unknown later value
// counts as modern, and then gets -32022).
func isModernHeader(v string) bool { return revision.PerRequest(v) }

// isModernPOST applies the era test to a POST: modern when a message
// carries _meta.protocolVersion or when MCP-Protocol-Version names a
// modern revision.
func isModernPOST(r *http.Request, env *envelope) bool {
	if env.metaVersion {
		return true
	}
	v, _ := headerField(r, headerProtocolVersion)
	return isModernHeader(v)
}

// modernParams are the members of a modern request's params the HTTP
// layer checks.
type modernParams struct {
	Meta      modernMeta     `json:"_meta"` // read by clients (modernOutgoing)
	Name      jsontext.Value `json:"name"`
	URI       jsontext.Value `json:"uri"`
	TaskID    jsontext.Value `json:"taskId"`
	Arguments jsontext.Value `json:"arguments"`
}

// The members of params the routing headers stand for, each alone (see
// routingMember).
var (
	nameMember      = []string{"name"}
	uriMember       = []string{"uri"}
	taskIDMember    = []string{"taskId"}
	argumentsMember = []string{"arguments"}
)

// routingMember returns the member of params Mcp-Name stands for in
// method, and how errors name it; nil when Mcp-Name has no part in it.
func routingMember(method string) (member []string, field string) {
	switch method {
	case "tools/call", "prompts/get":
		return nameMember, "params.name"
	case "resources/read":
		return uriMember, "params.uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return taskIDMember, "params.taskId"
	}
	return nil, ""
}

// malformedParams refuses params whose members cannot be read.
func malformedParams() *rpcError {
	return &rpcError{code: jsonrpc.CodeInvalidParams, message: "Invalid params: malformed params"}
}

// paramMember returns member of a decoded message's params (nil when
// absent), reading no further than it; ok is false for params that are
// not an object.
func paramMember(params jsontext.Value, member []string) (v jsontext.Value, ok bool) {
	var out [1]jsontext.Value // a slice of params: no copy
	if jsonrpc.MembersOfValid(params, member, out[:]) != nil {
		return nil, false
	}
	return out[0], true
}

// modernMeta holds the members of a modern request's _meta the HTTP layer
// checks (decoded as a struct: no map per request).
type modernMeta struct {
	ProtocolVersion    jsontext.Value `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities jsontext.Value `json:"io.modelcontextprotocol/clientCapabilities"`
}

// ParamHeader is a tool input property annotated with x-mcp-header
// (SEP-2243): clients of revision 2026-07-28 mirror its argument into the
// request header Mcp-Param-{Name}, so that intermediaries can route on it
// without reading the body.
type ParamHeader struct {
	// Name is the annotation's value, the suffix of the header name.
	Name string
	// Path names the property from the arguments object down (through
	// nested "properties").
	Path []string
}

// rpcError is a JSON-RPC error the handler refuses a well-formed modern
// request with (checkModern): answered by the Server when it has
// Middleware (Options.serveRefusals: see refusal), else by the handler.
type rpcError struct {
	code    int64
	message string
	data    correlated // nil: none but the correlation id; else versionData
}

// refusal returns e as the refusal the Server answers the request with,
// with the HTTP status the handler gives it (400) and its data as package
// mcp has it (the Server adds the correlation id).
func (e *rpcError) refusal() *handoff.Refusal {
	f := &handoff.Refusal{Code: e.code, Message: e.message, Status: http.StatusBadRequest}
	if d, ok := e.data.(versionData); ok {
		f.Data = mcp.UnsupportedVersionData(d)
	}
	return f
}

// checkModern validates a modern request before it is dispatched, in the
// order the official conformance suite accepts: the required _meta keys
// (-32602), MCP-Protocol-Version against _meta (-32020), the revision
// (-32022), then the Mcp-Method and Mcp-Name headers against the body
// (-32020). It returns the request's revision, or the error to answer.
func (h *Handler) checkModern(r *http.Request, env *envelope) (string, *rpcError) {
	// The rules of _meta are internal/revision's. The classifier's reading
	// of a marked request's params (parseIncoming) tells whether what the
	// routing needs is there (a bad logLevel, say, is the server's to
	// refuse); a request marked by its header alone is checked here.
	version, e := env.x.Reading.Version, env.x.Reading.Refusal
	if !env.x.Reading.Marked {
		version, e = revision.CheckMeta(env.x.Msg.Params)
	}
	if e != nil {
		return "", &rpcError{code: e.Code, message: e.Message}
	}
	method, params := env.x.Msg.Method, env.x.Msg.Params
	member, field := routingMember(method)
	var named jsontext.Value // the member Mcp-Name stands for
	if member != nil {
		var ok bool
		if named, ok = paramMember(params, member); !ok {
			return "", malformedParams()
		}
	}
	hv, hasHeader := headerField(r, headerProtocolVersion)
	switch {
	case !hasHeader:
		return "", &rpcError{code: codeHeaderMismatch,
			message: "Header mismatch: the MCP-Protocol-Version header is required and must equal _meta." + metaProtocolVersion}
	case hv != version:
		return "", &rpcError{code: codeHeaderMismatch,
			message: "Header mismatch: MCP-Protocol-Version " + quoteHeader(hv) + " differs from _meta." + metaProtocolVersion + " " + quoteHeader(version)}
	}
	if !revision.Served(h.opts.SupportedVersions, version) {
		e := revision.UnsupportedVersion(version, quoteHeader)
		return "", &rpcError{code: e.Code, message: e.Message,
			data: versionData{Supported: h.opts.SupportedVersions, Requested: version}}
	}
	if err := checkRoutingHeaders(r, method, named, field); err != nil {
		return "", err
	}
	if method == "tools/call" && h.opts.ToolParamHeaders != nil && named.Kind() == '"' {
		tool, ok := stringValue(named)
		if ok {
			if phs := h.opts.ToolParamHeaders(r.Context(), tool); len(phs) > 0 {
				args, ok := paramMember(params, argumentsMember)
				if !ok {
					return "", malformedParams()
				}
				if err := checkParamHeaders(r, phs, args); err != nil {
					return "", err
				}
			}
		}
	}
	return version, nil
}

// checkParamHeaders checks the Mcp-Param-* header of each annotated
// property against its argument: the header must be present exactly when
// the argument is (null counts as absent) and stand for the same value.
func checkParamHeaders(r *http.Request, params []ParamHeader, args jsontext.Value) *rpcError {
	for _, ph := range params {
		name := "Mcp-Param-" + ph.Name
		hv, hasHeader := headerField(r, name)
		arg := argumentAt(args, ph.Path)
		switch {
		case arg == nil && !hasHeader:
			continue
		case arg == nil:
			return &rpcError{code: codeHeaderMismatch, message: "Header mismatch: " + name + " is set but the argument " + quoteHeader(strings.Join(ph.Path, ".")) + " is absent"}
		case !hasHeader:
			return &rpcError{code: codeHeaderMismatch, message: "Header mismatch: the " + name + " header is required (the argument " + quoteHeader(strings.Join(ph.Path, ".")) + " is present)"}
		case !headerMatches(hv, arg):
			return &rpcError{code: codeHeaderMismatch, message: "Header mismatch: " + name + " " + quoteHeader(hv) + " differs from the argument " + quoteHeader(strings.Join(ph.Path, "."))}
		}
	}
	return nil
}

// argumentAt returns the value at path in the arguments object, or nil
// when it is absent or null.
func argumentAt(args jsontext.Value, path []string) jsontext.Value {
	v := args
	for _, name := range path {
		if v.Kind() != '{' {
			return nil
		}
		var obj map[string]jsontext.Value
		if jsonv2.Unmarshal(v, &obj) != nil {
			return nil
		}
		v = obj[name]
	}
	if len(v) == 0 || v.Kind() == 'n' {
		return nil
	}
	return v
}

// paramHeadersOf returns the properties of a tool's input schema that
// carry the x-mcp-header annotation, following "properties" from the root
// down (NewServerHandler uses it to fill Options.ToolParamHeaders). An
// annotation that is not a non-empty string is ignored.
func paramHeadersOf(inputSchema []byte) []ParamHeader {
	var out []ParamHeader
	var walk func(schema jsontext.Value, path []string)
	walk = func(schema jsontext.Value, path []string) {
		var s struct {
			Header     *string                   `json:"x-mcp-header"`
			Properties map[string]jsontext.Value `json:"properties"`
		}
		if len(path) > 32 || jsonv2.Unmarshal(schema, &s, jsonv2.RejectUnknownMembers(false)) != nil {
			return
		}
		if s.Header != nil && *s.Header != "" && len(path) > 0 {
			out = append(out, ParamHeader{Name: *s.Header, Path: slices.Clone(path)})
		}
		names := slices.Sorted(maps.Keys(s.Properties))
		for _, name := range names {
			walk(s.Properties[name], append(path, name))
		}
	}
	if bytes.Contains(inputSchema, []byte("x-mcp-header")) {
		walk(inputSchema, nil)
	}
	return out
}

// checkRoutingHeaders checks Mcp-Method against the body's method and,
// for the methods that name something, Mcp-Name against that name.
func checkRoutingHeaders(r *http.Request, method string, body jsontext.Value, field string) *rpcError {
	mismatch := func(msg string) *rpcError {
		return &rpcError{code: codeHeaderMismatch, message: "Header mismatch: " + msg}
	}
	hm, ok := headerField(r, headerMethod)
	if !ok {
		return mismatch("the Mcp-Method header is required")
	}
	if v, ok := decodeHeaderValue(hm); !ok || v != method {
		return mismatch("Mcp-Method " + quoteHeader(hm) + " differs from the method " + quoteHeader(method))
	}
	if field == "" {
		return nil // Mcp-Name has no part in method
	}
	hn, hasName := headerField(r, headerName)
	switch {
	case body == nil && !hasName:
		return nil // the body names nothing: the server answers -32602
	case body == nil:
		return mismatch("Mcp-Name is set but the body has no " + field)
	case !hasName:
		return mismatch("the Mcp-Name header is required for " + method + " (" + field + ")")
	}
	if !headerMatches(hn, body) {
		return mismatch("Mcp-Name " + quoteHeader(hn) + " differs from " + field)
	}
	return nil
}

// headerField returns the value of header name (case-insensitive; the
// values of repeated fields are joined with ", " as HTTP prescribes),
// with optional whitespace around it removed.
func headerField(r *http.Request, name string) (string, bool) {
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return strings.Trim(strings.Join(vs, ", "), " \t"), true
}

// decodeHeaderValue decodes a header value of the form =?base64?...?=
// (standard alphabet, padding required); any other value is literal. ok
// is false for a malformed encoded value.
func decodeHeaderValue(v string) (string, bool) {
	inner, found := strings.CutPrefix(v, "=?base64?")
	if !found {
		return v, true
	}
	inner, found = strings.CutSuffix(inner, "?=")
	if !found {
		return v, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// headerMatches reports whether header value hv (trimmed) stands for the
// JSON value body: a string equals the decoded value, a number compares
// numerically, a boolean as "true" or "false".
func headerMatches(hv string, body jsontext.Value) bool {
	v, ok := decodeHeaderValue(hv)
	if !ok {
		return false
	}
	switch body.Kind() {
	case '"':
		return revision.NameIs(body, v)
	case '0':
		a, okA := new(big.Int).SetString(v, 10)
		b, okB := new(big.Int).SetString(string(body), 10)
		if okA && okB {
			return a.Cmp(b) == 0
		}
		return v == string(body)
	case 't':
		return v == "true"
	case 'f':
		return v == "false"
	}
	return false
}

// stringValue decodes v, a JSON string of a decoded message (its raw
// bytes when it has no escapes, as revision.NameIs reads them); ok is
// false when v is not a string.
func stringValue(v jsontext.Value) (string, bool) {
	if v.Kind() == '"' && len(v) >= 2 && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	return s, jsonv2.Unmarshal(v, &s) == nil
}

// serveModern serves a POST of revision 2026-07-28 or later, in stateful
// and stateless mode alike: no session, no Mcp-Session-Id (one is ignored),
// one fresh session per request that knows the revision from its
// StatelessRequest.
func (h *Handler) serveModern(w http.ResponseWriter, r *http.Request, body []byte, env *envelope) {
	if env.batch {
		writeHTTPError(w, h.exchangeOf(r).with(env), http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			revision.BatchRefusedPerRequest)
		return
	}
	if !env.hasRequests() {
		// Notifications and responses have nothing to act on: no session
		// outlives a request (cancellation is a closed connection).
		w.WriteHeader(http.StatusAccepted)
		return
	}
	v, rerr := h.checkModern(r, env)
	if rerr != nil {
		if !h.opts.serveRefusals {
			writeHTTPErrorID(w, h.exchangeOf(r).with(env), http.StatusBadRequest, rerr.code, rerr.message, env.x.Msg.ID, rerr.data)
			return
		}
		// The Server answers it, through its middleware chain: the
		// refusal rides with the message (handoff.Request.Refusal).
		env.x.Refusal, v = rerr.refusal(), modernVersion
	}
	h.serveEphemeral(w, r, body, env, v, true)
}

// modernRequest is what a client sends in the headers of a modern request.
type modernRequest struct {
	version, method, name string
	cancelled             string         // notifications/cancelled: the raw requestId
	args                  jsontext.Value // tools/call: the arguments
}

// modernOutgoing reports whether msg, a message a client is about to POST,
// is a modern (2026-07-28) request or notification, and what its headers
// carry: MCP-Protocol-Version from _meta, Mcp-Method, and Mcp-Name for
// tools/call, prompts/get, resources/read and the tasks methods.
func modernOutgoing(msg []byte) (modernRequest, bool) {
	var m modernRequest
	if !bytes.Contains(msg, []byte(metaProtocolVersion)) {
		return m, false
	}
	var w struct {
		Method string         `json:"method"`
		Params jsontext.Value `json:"params"`
	}
	if jsonv2.Unmarshal(msg, &w) != nil || w.Method == "" || !revision.Marked(w.Params) {
		return m, false
	}
	var p modernParams
	if jsonv2.Unmarshal(w.Params, &p) != nil {
		return m, false
	}
	_ = jsonv2.Unmarshal(p.Meta.ProtocolVersion, &m.version)
	m.method, m.args = w.Method, p.Arguments
	if w.Method == "notifications/cancelled" {
		var c struct {
			RequestID jsontext.Value `json:"requestId"`
		}
		if jsonv2.Unmarshal(w.Params, &c) == nil {
			m.cancelled = string(c.RequestID)
		}
	}
	for _, v := range []jsontext.Value{p.Name, p.URI, p.TaskID} {
		var s string
		if v.Kind() == '"' && jsonv2.Unmarshal(v, &s) == nil {
			m.name = s
			break
		}
	}
	return m, true
}

// headers returns the routing headers as name, value pairs.
func (m modernRequest) headers() []string {
	h := []string{headerMethod, m.method}
	if m.name != "" {
		h = append(h, headerName, encodeHeaderValue(m.name))
	}
	return h
}

// encodeHeaderValue returns v as a header value: as it is when it is
// visible ASCII without surrounding spaces, else =?base64?...?=.
func encodeHeaderValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	if strings.TrimSpace(v) != v || strings.HasPrefix(v, "=?base64?") {
		return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
	}
	return v
}

// learnTools records the x-mcp-header annotations of the tools in the
// answer to a modern tools/list the transport sent.
func (t *ClientTransport) learnTools(msg []byte) {
	var r struct {
		ID     jsontext.Value `json:"id"`
		Result struct {
			Tools []struct {
				Name        string         `json:"name"`
				InputSchema jsontext.Value `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if jsonv2.Unmarshal(msg, &r) != nil || r.ID == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.listIDs[string(r.ID)] {
		return
	}
	delete(t.listIDs, string(r.ID))
	for _, tool := range r.Result.Tools {
		if ph := paramHeadersOf(tool.InputSchema); len(ph) > 0 {
			if t.paramHeaders == nil {
				t.paramHeaders = map[string][]ParamHeader{}
			}
			t.paramHeaders[tool.Name] = ph
		} else {
			delete(t.paramHeaders, tool.Name)
		}
	}
}

// paramHeaderValues returns the Mcp-Param-{Name} headers (name, value
// pairs) of a tools/call's arguments: strings as they are (base64-wrapped
// when not plain visible ASCII), numbers and booleans as written.
func paramHeaderValues(params []ParamHeader, args jsontext.Value) []string {
	var out []string
	for _, ph := range params {
		v := argumentAt(args, ph.Path)
		switch v.Kind() {
		case '"':
			var s string
			if jsonv2.Unmarshal(v, &s) == nil {
				out = append(out, "Mcp-Param-"+ph.Name, encodeHeaderValue(s))
			}
		case '0', 't', 'f':
			out = append(out, "Mcp-Param-"+ph.Name, string(v))
		}
	}
	return out
}
