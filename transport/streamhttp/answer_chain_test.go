package streamhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// chainCodes records, by request id, the error code the middleware chain
// returned (0: a result).
type chainCodes struct {
	mu    sync.Mutex
	codes map[string]int64
}

func (cc *chainCodes) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, req *mcp.Request) (any, error) {
		_, _, _, _ = req.ProtocolVersion(), req.ClientCapabilities(), req.ClientInfo(), req.LogLevel()
		res, err := next(ctx, req)
		if req.IsNotification() {
			return res, err
		}
		code := int64(0)
		var e *mcp.Error
		if errors.As(err, &e) {
			code = e.Code
		} else if err != nil {
			code = -1
		}
		cc.mu.Lock()
		cc.codes[string(req.ID)] = code
		cc.mu.Unlock()
		return res, err
	}
}

func (cc *chainCodes) code(id string) (int64, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c, ok := cc.codes[id]
	return c, ok
}

// chainHandler is an mcp.Server behind NewServerHandler whose Middleware
// records in cc, with custom methods whose results cannot be sent: a JSON
// array, a channel, and one over the HTTP session's MaxMessageBytes.
func chainHandler(t *testing.T, cc *chainCodes) *streamhttp.Handler {
	cc.codes = map[string]int64{}
	o := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
	o.Middleware = []mcp.Middleware{cc.middleware}
	o.Methods = map[string]mcp.MethodHandler{
		"acme/ok":    func(context.Context, *mcp.Request) (any, error) { return map[string]string{"ok": "yes"}, nil },
		"acme/array": func(context.Context, *mcp.Request) (any, error) { return []int{1}, nil },
		"acme/chan":  func(context.Context, *mcp.Request) (any, error) { return map[string]any{"c": make(chan int)}, nil },
		"acme/big": func(context.Context, *mcp.Request) (any, error) {
			return map[string]string{"text": strings.Repeat("x", transport.DefaultMaxMessageBytes)}, nil
		},
	}
	h := streamhttp.NewServerHandler(mcp.NewServer(o), &streamhttp.Options{Logger: quiet, ResponseMode: streamhttp.ResponseJSON,
		SupportedVersions: modernVersions, ToolParamHeaders: echoRegionHeader})
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// echoRegionHeader is the ToolParamHeaders of chainHandler: the echo
// tool's argument "region" is mirrored in Mcp-Param-Region.
func echoRegionHeader(_ context.Context, tool string) []streamhttp.ParamHeader {
	if tool != "echo" {
		return nil
	}
	return []streamhttp.ParamHeader{{Name: "Region", Path: []string{"region"}}}
}

// httpChainCase is one POST and the error code of its answer (0: a
// result), with its HTTP status when status is not 0. unseen: the
// transport answers it (id null) and the middleware sees nothing of it.
type httpChainCase struct {
	name, id, body string
	version        string
	header         map[string]string
	code           int64
	status         int
	unseen         bool
}

// checkHTTPChain posts each case and checks that the middleware saw the
// answer the client got: the same id, the same error code (or a result).
func checkHTTPChain(t *testing.T, hs *httptest.Server, cc *chainCodes, session string, cases []httpChainCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, hs, request{body: tc.body, version: tc.version, header: tc.header, session: session})
			body := readBody(t, resp)
			if tc.status != 0 {
				assert.Equal(t, tc.status, resp.StatusCode, body)
			}
			a := decodeAnswer(t, body)
			seen, ok := cc.code(tc.id)
			if tc.unseen {
				assert.Equal(t, "null", string(a.ID), body)
				require.NotNil(t, a.Error, body)
				assert.Equal(t, tc.code, a.Error.Code, body)
				assert.False(t, ok, "the middleware saw %s, which the transport answers", tc.id)
				return
			}
			require.Equal(t, tc.id, string(a.ID), body)
			require.True(t, ok, "the middleware saw no answer to %s", tc.id)
			if tc.code == 0 {
				assert.Nil(t, a.Error, body)
				assert.Zero(t, seen)
				return
			}
			require.NotNil(t, a.Error, body)
			assert.Equal(t, tc.code, a.Error.Code, body)
			assert.Equal(t, a.Error.Code, seen, "the middleware saw what the client got")
		})
	}
}

// 2026-07-28 POSTs, each served on its own: the engine's refusals, the
// results that cannot be sent, and the refusals of the handler's own
// checks of the POST (its headers, _meta and revision, answered by the
// Server with the HTTP status the handler gives them) reach the
// Middleware as the error the client gets. What is not a well-formed
// request (a batch, a POST the handler cannot read as JSON) is answered
// by the handler and never seen.
func TestHTTPAnswerChainModern(t *testing.T) {
	cc := &chainCodes{}
	hs := newServer(t, chainHandler(t, cc))
	post := func(name, id, method, meta string, code int64) httpChainCase {
		return httpChainCase{name: name, id: id, body: modernRequest(id, method, "", meta), version: modern, header: modernHeaders(method, "", nil), code: code}
	}
	batch := "[" + modernRequest(`"b1"`, "acme/ok", "", "") + "," + modernRequest(`"b2"`, "acme/ok", "", "") + "]"
	cases := []httpChainCase{
		post("served", `"ok"`, "acme/ok", "", 0),
		post("unknown method", `7`, "acme/none", "", mcp.CodeMethodNotFound),
		post("result not an object", `"array"`, "acme/array", "", mcp.CodeInternalError),
		post("result not serializable", `"chan"`, "acme/chan", "", mcp.CodeInternalError),
		post("response over MaxMessageBytes", `"big"`, "acme/big", "", mcp.CodeInternalError),
		// Not well-formed requests: the handler's own answers.
		{name: "batch refused", id: `"b1"`, body: batch, version: modern, header: modernHeaders("acme/ok", "", nil), code: mcp.CodeInvalidRequest, status: http.StatusBadRequest, unseen: true},
		{name: "Content-Type not JSON", id: `"ct"`, body: modernRequest(`"ct"`, "acme/ok", "", ""), version: modern,
			header: modernHeaders("acme/ok", "", map[string]string{"Content-Type": "text/plain"}), code: -32000, status: http.StatusUnsupportedMediaType, unseen: true},
	}
	for _, rc := range handlerRefusals() { // each of the handler's checks of the POST
		cases = append(cases, httpChainCase{name: "handler's check: " + rc.name, id: rc.id, body: rc.body, version: rc.version, header: rc.header, code: rc.code, status: http.StatusBadRequest})
	}
	checkHTTPChain(t, hs, cc, "", cases)
	_, ok := cc.code(`"b2"`)
	assert.False(t, ok, "no part of a refused batch is seen")
}

// refusalCase is a 2026-07-28 POST the handler's own checks refuse.
type refusalCase struct {
	name, id, body, version string
	header                  map[string]string
	code                    int64
}

// handlerRefusals are POSTs refused by each of the handler's checks of a
// 2026-07-28 request, each carrying its _meta.correlationId when it has a
// _meta.
func handlerRefusals() []refusalCase {
	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	const pv = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	meta := func(id, members string) string {
		return `"_meta":{` + members + `,"correlationId":"cid-` + strings.Trim(id, `"`) + `"}`
	}
	req := func(id, method, params, members string) string {
		return modernRequest(id, method, params, meta(id, members))
	}
	hdr := modernHeaders
	return []refusalCase{
		{name: "_meta lacks clientCapabilities", id: `"meta"`, body: req(`"meta"`, "acme/ok", "", pv), version: modern, header: hdr("acme/ok", "", nil), code: mcp.CodeInvalidParams},
		{name: "params by position", id: `"pos"`, body: `{"jsonrpc":"2.0","id":"pos","method":"acme/ok","params":[1]}`, version: modern, header: hdr("acme/ok", "", nil), code: mcp.CodeInvalidParams},
		{name: "MCP-Protocol-Version missing", id: `"nohdr"`, body: req(`"nohdr"`, "acme/ok", "", pv+","+caps), header: hdr("acme/ok", "", nil), code: mcp.CodeHeaderMismatch},
		{name: "MCP-Protocol-Version differs", id: `"hdr"`, body: req(`"hdr"`, "acme/ok", "", pv+","+caps), version: "2025-11-25", header: hdr("acme/ok", "", nil), code: mcp.CodeHeaderMismatch},
		{name: "unsupported revision", id: `"v999"`, body: req(`"v999"`, "acme/ok", "", `"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+caps), version: "v999.0.0", header: hdr("acme/ok", "", nil), code: mcp.CodeUnsupportedProtocolVersion},
		{name: "Mcp-Method missing", id: `8`, body: req(`8`, "acme/ok", "", pv+","+caps), version: modern, code: mcp.CodeHeaderMismatch},
		{name: "Mcp-Method differs", id: `9`, body: req(`9`, "acme/ok", "", pv+","+caps), version: modern, header: hdr("tools/list", "", nil), code: mcp.CodeHeaderMismatch},
		{name: "Mcp-Name differs", id: `"name"`, body: req(`"name"`, "tools/call", `"name":"echo","arguments":{}`, pv+","+caps), version: modern, header: hdr("tools/call", "other", nil), code: mcp.CodeHeaderMismatch},
		{name: "Mcp-Param differs", id: `"param"`, body: req(`"param"`, "tools/call", `"name":"echo","arguments":{"region":"eu"}`, pv+","+caps), version: modern,
			header: hdr("tools/call", "echo", map[string]string{"Mcp-Param-Region": "us"}), code: mcp.CodeHeaderMismatch},
		{name: "subscriptions/listen", id: `"listen"`, body: req(`"listen"`, "subscriptions/listen", `"notifications":{}`, pv+","+caps), version: modern, header: hdr("tools/list", "", nil), code: mcp.CodeHeaderMismatch},
	}
}

// The refusals a Server answers for the handler are on the wire exactly
// what the handler answers itself in front of another Serve: the same
// status, Content-Type and body (the correlation id aside when the
// request has none of its own), in every ResponseMode; a Server without
// Middleware leaves them to the handler.
func TestHTTPRefusalWireUnchanged(t *testing.T) {
	cidRE := regexp.MustCompile(`"correlationId":"[^"]*"`)
	for _, mode := range []streamhttp.ResponseMode{streamhttp.ResponseAuto, streamhttp.ResponseSSE, streamhttp.ResponseJSON} {
		opts := func() *streamhttp.Options {
			return &streamhttp.Options{Logger: quiet, ResponseMode: mode, SupportedVersions: modernVersions, ToolParamHeaders: echoRegionHeader}
		}
		plain, _, _ := startHTTP(t, opts())
		cc := &chainCodes{codes: map[string]int64{}}
		servers := map[string]*httptest.Server{}
		for name, mws := range map[string][]mcp.Middleware{"no Middleware": nil, "a Middleware": {cc.middleware}} {
			o := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
			o.Middleware = mws
			o.Methods = map[string]mcp.MethodHandler{"acme/ok": func(context.Context, *mcp.Request) (any, error) { return map[string]string{"ok": "yes"}, nil }}
			servers[name] = newServer(t, streamhttp.NewServerHandler(mcp.NewServer(o), opts()))
		}
		for _, tc := range handlerRefusals() {
			r := request{body: tc.body, version: tc.version, header: tc.header}
			resp := do(t, plain, r)
			want := readBody(t, resp)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, want)
			wantType := resp.Header.Get("Content-Type")
			cid := "cid-" + strings.Trim(tc.id, `"`)
			for name, hs := range servers {
				t.Run(fmt.Sprintf("mode %d/%s/%s", mode, name, tc.name), func(t *testing.T) {
					resp := do(t, hs, r)
					got := readBody(t, resp)
					assert.Equal(t, http.StatusBadRequest, resp.StatusCode, got)
					assert.Equal(t, wantType, resp.Header.Get("Content-Type"))
					if strings.Contains(tc.body, cid) {
						assert.Equal(t, want, got, "byte for byte")
						assert.Contains(t, got, `"correlationId":"`+cid+`"`)
					} else {
						assert.Equal(t, cidRE.ReplaceAllString(want, "cid"), cidRE.ReplaceAllString(got, "cid"))
						assert.Regexp(t, cidRE, got)
					}
					mcptest.ValidateServerMessage(t, mcptest.RevisionModern, nil, []byte(got))
				})
			}
			seen, ok := cc.code(tc.id)
			assert.True(t, ok, "the Middleware saw %s", tc.name)
			assert.Equal(t, tc.code, seen, tc.name)
		}
	}
}

// A Middleware sees a refusal of the handler's checks as the request it
// refuses (its method, id and params, the refusal's data) and what it
// returns is answered: a result (200), an error of another code (that
// code's status), or an error of the refusal's code (the refusal's
// status).
func TestHTTPRefusalReplacedByMiddleware(t *testing.T) {
	type seenReq struct {
		method, params string
		data           any
	}
	var mu sync.Mutex
	seen := map[string]seenReq{}
	replace := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			var e *mcp.Error
			if !errors.As(err, &e) {
				return res, err
			}
			mu.Lock()
			seen[string(req.ID)] = seenReq{method: req.Method, params: string(req.Params), data: e.Data}
			mu.Unlock()
			switch string(req.ID) {
			case `"result"`:
				return map[string]string{"replaced": "yes"}, nil
			case `"other"`:
				return nil, &mcp.Error{Code: mcp.CodeMethodNotFound, Message: "replaced"}
			case `"same"`:
				return nil, &mcp.Error{Code: e.Code, Message: "replaced"}
			}
			return res, err
		}
	}
	o := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
	o.Middleware = []mcp.Middleware{replace}
	hs := newServer(t, streamhttp.NewServerHandler(mcp.NewServer(o), &streamhttp.Options{Logger: quiet, SupportedVersions: modernVersions}))
	v999 := `"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, id, body, version string
		header                  map[string]string
		status                  int
		code                    int64 // 0: a result
	}{
		{name: "header mismatch replaced by a result", id: `"result"`, body: modernRequest(`"result"`, "tools/list", "", ""), version: modern,
			header: modernHeaders("tools/call", "", nil), status: http.StatusOK},
		{name: "unsupported revision replaced by -32601", id: `"other"`, body: modernRequest(`"other"`, "tools/list", "", v999), version: "v999.0.0",
			header: modernHeaders("tools/list", "", nil), status: http.StatusNotFound, code: mcp.CodeMethodNotFound},
		{name: "invalid _meta replaced by its own code", id: `"same"`, body: `{"jsonrpc":"2.0","id":"same","method":"tools/list","params":[1]}`, version: modern,
			header: modernHeaders("tools/list", "", nil), status: http.StatusBadRequest, code: mcp.CodeInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, hs, request{body: tc.body, version: tc.version, header: tc.header})
			body := readBody(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode, body)
			a := decodeAnswer(t, body)
			assert.Equal(t, tc.id, string(a.ID))
			if tc.code == 0 {
				require.Nil(t, a.Error, body)
				assert.Contains(t, string(a.Result), `"replaced":"yes"`)
			} else {
				require.NotNil(t, a.Error, body)
				assert.Equal(t, tc.code, a.Error.Code)
				assert.Equal(t, "replaced", a.Error.Message)
			}
			mcptest.ValidateServerMessage(t, mcptest.RevisionModern, nil, []byte(body))
			mu.Lock()
			s, ok := seen[tc.id]
			mu.Unlock()
			require.True(t, ok, "the Middleware saw the refusal")
			assert.Equal(t, "tools/list", s.method)
			var p struct {
				Params jsontext.Value `json:"params"`
			}
			require.NoError(t, json.Unmarshal([]byte(tc.body), &p))
			assert.Equal(t, string(p.Params), s.params, "the request's params")
		})
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, mcp.UnsupportedVersionData{Supported: modernVersions, Requested: "v999.0.0"}, seen[`"other"`].data,
		"the data of -32022, its correlation id added when it is sent")
}
