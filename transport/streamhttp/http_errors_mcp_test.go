package streamhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// errorServer is an mcp.Server behind NewServerHandler whose custom
// methods fail with data of their own, with the resources catalog, a
// MaxListens of 1 and a MaxSubscriptionBytes of 200.
type errorServer struct {
	srv *httptest.Server
	// the data the handlers return: a test checks it is not changed
	handlerMap map[string]any
	handlerSE  *mcp.StructuredError
}

// Long URIs: longURI is over MaxURIBytes, subURI within it but over
// MaxSubscriptionBytes (200) in a subscription or listen filter.
var (
	longURI = "test://" + strings.Repeat("x", 9000)
	subURI  = "test://" + strings.Repeat("s", 150)
)

func startErrorServer(t *testing.T) *errorServer {
	t.Helper()
	es := &errorServer{handlerMap: map[string]any{"reason": "quota"},
		handlerSE: &mcp.StructuredError{Code: mcp.ErrInvalidArgument, Message: "bad input"}}
	fail := func(code int64, data any) mcp.MethodHandler {
		return func(context.Context, *mcp.Request) (any, error) {
			return nil, &mcp.Error{Code: code, Message: "handler error", Data: data}
		}
	}
	o := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
	o.Resources = mcptest.NewCatalog()
	o.MaxListens, o.MaxSubscriptionBytes = 1, 200
	o.Methods = map[string]mcp.MethodHandler{
		"x/map":    fail(1050, es.handlerMap),
		"x/se":     fail(1051, es.handlerSE),
		"x/raw":    fail(1052, json.RawMessage(`{"reason":"raw"}`)),
		"x/string": fail(1053, "plain text"),
		"x/huge":   fail(1054, map[string]any{"blob": strings.Repeat("x", 4<<20)}),
	}
	h := streamhttp.NewServerHandler(mcp.NewServer(o), &streamhttp.Options{Logger: quiet, ResponseMode: streamhttp.ResponseJSON, SupportedVersions: modernVersions})
	es.srv = newServer(t, h)
	t.Cleanup(func() {
		assert.Equal(t, map[string]any{"reason": "quota"}, es.handlerMap, "the handler's map is not changed")
		assert.Empty(t, es.handlerSE.CorrelationID, "the handler's StructuredError is not changed")
	})
	return es
}

// modernSend returns a send that makes a 2026-07-28 request of method
// with params (members before _meta) to srv, the request's correlation
// id in its _meta.
func modernSend(srv *httptest.Server, method, name, params string) func(*testing.T, string) (*http.Response, string) {
	return func(t *testing.T, cid string) (*http.Response, string) {
		body := modernRequest(`7`, method, params, `"_meta":{`+pvMember+","+capsMember+metaCID(cid)+`}`)
		return do(t, srv, request{body: body, version: modern, header: modernHeaders(method, name, nil)}), ""
	}
}

// mcpErrorPaths are the errors an mcp.Server answers a 2026-07-28
// request with through the Handler: keel's limit errors, and a handler's
// errors with data of their own (a copy gains the correlation id; an
// error too large to send is sent with only the id as its data).
func mcpErrorPaths(t *testing.T) []errorPath {
	es := startErrorServer(t)
	// One listen fills MaxListens until the end of the test.
	ctx, cancel := context.WithCancel(context.Background())
	resp := doCtx(t, ctx, es.srv, request{body: modernRequest(`"L"`, "subscriptions/listen", `"notifications":{}`, ""),
		version: modern, header: modernHeaders("subscriptions/listen", "", nil)})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sseEvents(t, resp.Body, 1) // the acknowledgement: the listen is open
	t.Cleanup(func() { cancel(); resp.Body.Close() })

	limit := func(name string, max int) string { return `"limit":"` + name + `","max":` + itoa(max) }
	return []errorPath{
		{name: "2026-07-28 URI over MaxURIBytes", status: 200, code: -32602, parsed: true, modern: true, dataHas: limit("MaxURIBytes", 8192),
			send: modernSend(es.srv, "resources/read", longURI, `"uri":"`+longURI+`"`)},
		{name: "2026-07-28 listen filter entry over MaxURIBytes", status: 200, code: -32602, parsed: true, modern: true, dataHas: limit("MaxURIBytes", 8192),
			send: modernSend(es.srv, "subscriptions/listen", "", `"notifications":{"resourceSubscriptions":["`+longURI+`"]}`)},
		{name: "2026-07-28 listen filter over MaxSubscriptionBytes", status: 200, code: -32602, parsed: true, modern: true, dataHas: limit("MaxSubscriptionBytes", 200),
			send: modernSend(es.srv, "subscriptions/listen", "", `"notifications":{"resourceSubscriptions":["`+subURI+`"]}`)},
		{name: "2026-07-28 MaxListens", status: 200, code: -32000, parsed: true, modern: true, dataHas: limit("MaxListens", 1),
			send: modernSend(es.srv, "subscriptions/listen", "", `"notifications":{}`)},
		{name: "2026-07-28 handler data a map", status: 200, code: 1050, parsed: true, modern: true, dataHas: `"reason":"quota"`,
			send: modernSend(es.srv, "x/map", "", "")},
		{name: "2026-07-28 handler data a raw JSON object", status: 200, code: 1052, parsed: true, modern: true, dataHas: `"reason":"raw"`,
			send: modernSend(es.srv, "x/raw", "", "")},
		{name: "2026-07-28 handler data a StructuredError without id", status: 200, code: 1051, parsed: true, modern: true, dataHas: `"code":"INVALID_ARGUMENT"`,
			send: modernSend(es.srv, "x/se", "", "")},
		{name: "2026-07-28 handler error too large to send", status: 200, code: 1054, parsed: true, modern: true, onlyCID: true,
			send: modernSend(es.srv, "x/huge", "", "")},
		// The handler's checks of the POST, answered by the Server.
		{name: "2026-07-28 Server answers _meta lacks clientCapabilities", status: 400, code: -32602, parsed: true, modern: true, onlyCID: true,
			send: plainSend(es.srv, request{version: modern, header: modernHeaders("echo", "", nil)}, func(cid string) string { return modernBody(pvMember, cid) })},
		{name: "2026-07-28 Server answers Mcp-Method differs", status: 400, code: -32020, parsed: true, modern: true, onlyCID: true,
			send: plainSend(es.srv, request{version: modern, header: modernHeaders("tools/list", "", nil)}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "2026-07-28 Server answers unsupported revision", status: 400, code: -32022, parsed: true, modern: true, dataHas: `"requested":"v999.0.0"`,
			send: plainSend(es.srv, request{version: "v999.0.0", header: modernHeaders("echo", "", nil)}, func(cid string) string {
				return modernBody(`"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+capsMember, cid)
			})},
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// A handler's error data that is not an object (a string) is sent as it
// is, in both revisions' rules: only objects gain a correlation id.
func TestHandlerErrorDataNotAnObjectIsSentAsItIs(t *testing.T) {
	es := startErrorServer(t)
	resp, _ := modernSend(es.srv, "x/string", "", "")(t, "cid-string")
	raw := readBody(t, resp)
	a := decodeAnswer(t, raw)
	require.NotNil(t, a.Error, raw)
	assert.Equal(t, int64(1053), a.Error.Code)
	assert.JSONEq(t, `"plain text"`, string(a.Error.Data), raw)
	mcptest.ValidateServerMessage(t, mcptest.RevisionModern, nil, []byte(raw))
}
