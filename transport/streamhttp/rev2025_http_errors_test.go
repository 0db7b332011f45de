//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// legacyBody returns a 2025 request (id 2) of method, whose params carry
// cid as _meta.correlationId (no params when cid is "").
func legacyBody(method, cid string) string {
	if cid == "" {
		return `{"jsonrpc":"2.0","id":2,"method":"` + method + `"}`
	}
	return `{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":{"_meta":{"correlationId":"` + cid + `"}}}`
}

// initWithCID is an initialize request carrying cid as _meta.correlationId.
func initWithCID(cid string) string {
	if cid == "" {
		return initBody
	}
	return strings.Replace(initBody, `"capabilities":{}`, `"capabilities":{},"_meta":{"correlationId":"`+cid+`"}`, 1)
}

// mcpSession opens a session of an mcp.Server at version and returns its
// id and its connection's correlation id, as the server's own errors on it
// carry it.
func mcpSession(t *testing.T, srv *httptest.Server, version string) (sid, connCID string) {
	t.Helper()
	sid = initialize(t, srv, version)
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":99,"method":"no/such/method"}`, session: sid, version: version})
	var b errorBody
	require.NoError(t, json.Unmarshal([]byte(readBody(t, resp)), &b))
	require.Equal(t, int64(-32601), b.Error.Code)
	var data struct {
		CorrelationID string `json:"correlationId"`
	}
	require.NoError(t, json.Unmarshal(b.Error.Data, &data))
	require.NotEmpty(t, data.CorrelationID)
	return sid, data.CorrelationID
}

// startMCPHTTP serves an mcp.Server with the slow tool (it reports its
// calls on the returned channel) through NewServerHandler with opts.
func startMCPHTTP(t *testing.T, opts *streamhttp.Options) (*httptest.Server, chan *mcp.ToolCall) {
	t.Helper()
	tools := mcptest.NewTools(mcptest.ToolSlow)
	started := make(chan *mcp.ToolCall, 16)
	tools.SlowStarted = started
	srv := mcp.NewServer(mcptest.ServerOptions(tools))
	o := streamhttp.Options{Logger: quiet}
	if opts != nil {
		o = *opts
		o.Logger = quiet
	}
	h := streamhttp.NewServerHandler(srv, &o)
	return newServer(t, h), started
}

// openGET opens the session's GET stream and leaves it open until the
// end of the test.
func openGET(t *testing.T, srv *httptest.Server, sid string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
}

// slowCall starts a call of the slow tool (id 5, cid as its
// _meta.correlationId) in session sid and waits until it runs; the
// returned channel yields its response.
func slowCall(t *testing.T, srv *httptest.Server, started chan *mcp.ToolCall, sid, cid string) chan *http.Response {
	t.Helper()
	meta := ""
	if cid != "" {
		meta = `,"_meta":{"correlationId":"` + cid + `"}`
	}
	body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}` + meta + `}}`
	out := make(chan *http.Response, 1)
	go func() {
		// (do's require fails only the goroutine's exchange: the caller
		// then reads no response and fails itself.)
		out <- do(t, srv, request{body: body, session: sid, version: "2025-11-25"})
	}()
	<-started
	return out
}

// buildErrorPaths are the error paths of the 2025 rules: sessions, the
// GET stream, resumption, stateless 2025 requests.
func buildErrorPaths(t *testing.T) []errorPath {
	legacy, _, _ := startHTTP(t, nil)
	stateless, _, _ := startHTTP(t, &streamhttp.Options{Stateless: true})
	closed, closedH, _ := startHTTP(t, nil)
	require.NoError(t, closedH.Close())

	maxSessions, _, _ := startHTTP(t, &streamhttp.Options{MaxSessions: 1})
	initialize(t, maxSessions, "2025-11-25")
	maxPeer, _, _ := startHTTP(t, &streamhttp.Options{MaxSessionsPerPeer: 1})
	initialize(t, maxPeer, "2025-11-25")

	f := newFakeServer()
	bound := streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, Logger: quiet})
	boundSrv := newServerHandler(t, bound, streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Logger: quiet})(bound))
	resp := do(t, boundSrv, request{body: initBody, header: map[string]string{"Authorization": "Bearer alice-token"}})
	readBody(t, resp)
	aliceSID := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, aliceSID)

	served, started := startMCPHTTP(t, &streamhttp.Options{ResponseMode: streamhttp.ResponseJSON, MaxSessionGETStreams: 4})
	oneGET, _ := startMCPHTTP(t, &streamhttp.Options{MaxSessionGETStreams: 1})

	// inSession returns a send that opens a session of srv at version,
	// prepares it, then makes the request r names.
	inSession := func(srv *httptest.Server, version string, prepare func(t *testing.T, sid string), r func(sid, cid string) request) func(*testing.T, string) (*http.Response, string) {
		return func(t *testing.T, cid string) (*http.Response, string) {
			sid, conn := mcpSession(t, srv, version)
			if prepare != nil {
				prepare(t, sid)
			}
			return do(t, srv, r(sid, cid)), conn
		}
	}
	get := func(last string) func(sid, cid string) request {
		return func(sid, _ string) request {
			rr := request{method: http.MethodGet, session: sid}
			if last != "" {
				rr.header = map[string]string{"Last-Event-ID": last}
			}
			return rr
		}
	}
	post := func(method string) func(string) string {
		return func(cid string) string { return legacyBody(method, cid) }
	}
	// In a 2025 session of an mcp.Server: keel's limit errors and a
	// handler's errors with data of their own.
	es := startErrorServer(t)
	sessionCall := func(method, params string) func(*testing.T, string) (*http.Response, string) {
		return inSession(es.srv, "2025-11-25", nil, func(sid, cid string) request {
			p := params
			if cid != "" {
				if p != "" {
					p += ","
				}
				p += `"_meta":{"correlationId":"` + cid + `"}`
			}
			return request{body: `{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":{` + p + `}}`, session: sid, version: "2025-11-25"}
		})
	}

	return []errorPath{
		{name: "unsupported MCP-Protocol-Version", status: 400, code: -32600, parsed: true, send: plainSend(legacy, request{version: "1999-01-01"}, post("echo"))},
		{name: "Mcp-Session-Id missing", status: 400, code: -32600, parsed: true, send: plainSend(legacy, request{}, post("echo"))},
		{name: "unknown session", status: 404, code: -32001, parsed: true, send: plainSend(legacy, request{session: "no-such-session"}, post("echo"))},
		{name: "session of another user", status: 404, code: -32001, parsed: true, send: plainSend(boundSrv, request{session: aliceSID, header: map[string]string{"Authorization": "Bearer bob-token"}}, post("whoami"))},
		{name: "MaxSessions", status: 503, code: -32000, parsed: true, dataHas: `"limit":"MaxSessions"`, send: plainSend(maxSessions, request{}, initWithCID)},
		{name: "MaxSessionsPerPeer", status: 429, code: -32000, parsed: true, dataHas: `"limit":"MaxSessionsPerPeer"`, send: plainSend(maxPeer, request{}, initWithCID)},
		{name: "batch refused in a 2025-06-18 session", status: 400, code: -32600, send: inSession(served, "2025-06-18", nil, func(sid, _ string) request {
			return request{body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, session: sid, version: "2025-06-18"}
		})},
		{name: "id in use by an unanswered request", status: 400, code: -32600, parsed: true, send: func(t *testing.T, cid string) (*http.Response, string) {
			sid, conn := mcpSession(t, served, "2025-11-25")
			first := slowCall(t, served, started, sid, "")
			t.Cleanup(func() {
				readBody(t, do(t, served, request{method: http.MethodDelete, session: sid}))
				readBody(t, <-first)
			})
			meta := ""
			if cid != "" {
				meta = `,"_meta":{"correlationId":"` + cid + `"}`
			}
			body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}` + meta + `}}`
			return do(t, served, request{body: body, session: sid, version: "2025-11-25"}), conn
		}},
		{name: "session ended before the response", status: 404, code: -32001, parsed: true, send: func(t *testing.T, cid string) (*http.Response, string) {
			sid, conn := mcpSession(t, served, "2025-11-25")
			call := slowCall(t, served, started, sid, cid)
			resp := do(t, served, request{method: http.MethodDelete, session: sid})
			readBody(t, resp)
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
			return <-call, conn
		}},
		{name: "stateless batch outside 2025-03-26", status: 400, code: -32600, send: plainSend(stateless, request{version: "2025-06-18"}, func(string) string {
			return `[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":2,"method":"echo"}]`
		})},
		{name: "stateless unsupported MCP-Protocol-Version", status: 400, code: -32600, parsed: true, send: plainSend(stateless, request{version: "1999-01-01"}, post("echo"))},
		{name: "stateless duplicate id in a batch", status: 400, code: -32600, send: plainSend(stateless, request{version: "2025-03-26"}, func(string) string {
			return `[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":1,"method":"echo"}]`
		})},
		{name: "GET Accept lacks text/event-stream", status: 406, code: -32000, send: plainSend(legacy, request{method: http.MethodGet, header: map[string]string{"Accept": "application/json"}}, nil)},
		{name: "GET unsupported MCP-Protocol-Version", status: 400, code: -32600, send: plainSend(legacy, request{method: http.MethodGet, version: "1999-01-01"}, nil)},
		{name: "GET while shutting down", status: 503, code: -32000, send: plainSend(closed, request{method: http.MethodGet}, nil)},
		{name: "GET unknown session", status: 404, code: -32001, send: plainSend(legacy, request{method: http.MethodGet, session: "no-such-session"}, nil)},
		{name: "MaxSessionGETStreams", status: 429, code: -32000, dataHas: `"limit":"MaxSessionGETStreams"`, send: inSession(oneGET, "2025-11-25", func(t *testing.T, sid string) { openGET(t, oneGET, sid) }, get(""))},
		{name: "GET stream already open", status: 409, code: -32000, send: inSession(served, "2025-11-25", func(t *testing.T, sid string) { openGET(t, served, sid) }, get(""))},
		{name: "Last-Event-ID malformed", status: 400, code: -32000, send: inSession(served, "2025-11-25", nil, get("garbage"))},
		{name: "Last-Event-ID of events no longer stored", status: 400, code: -32000, send: inSession(served, "2025-11-25", nil, get("42_3"))},
		{name: "Last-Event-ID beyond a live stream", status: 400, code: -32000, send: inSession(served, "2025-11-25", func(t *testing.T, sid string) { openGET(t, served, sid) }, get("0_99"))},
		{name: "Last-Event-ID of a stream still connected", status: 409, code: -32000, send: inSession(served, "2025-11-25", func(t *testing.T, sid string) { openGET(t, served, sid) }, get("0_0"))},
		{name: "DELETE unsupported MCP-Protocol-Version", status: 400, code: -32600, send: plainSend(legacy, request{method: http.MethodDelete, version: "1999-01-01"}, nil)},
		{name: "DELETE unknown session", status: 404, code: -32001, send: plainSend(legacy, request{method: http.MethodDelete, session: "no-such-session"}, nil)},
		{name: "2025 session: URI over MaxURIBytes", status: 200, code: -32602, parsed: true, dataHas: `"limit":"MaxURIBytes"`, send: sessionCall("resources/read", `"uri":"`+longURI+`"`)},
		{name: "2025 session: subscriptions over MaxSubscriptionBytes", status: 200, code: -32000, parsed: true, dataHas: `"limit":"MaxSubscriptionBytes"`, send: sessionCall("resources/subscribe", `"uri":"`+subURI+`"`)},
		{name: "2025 session: handler data a map", status: 200, code: 1050, parsed: true, dataHas: `"reason":"quota"`, send: sessionCall("x/map", "")},
		{name: "2025 session: handler data a raw JSON object", status: 200, code: 1052, parsed: true, dataHas: `"reason":"raw"`, send: sessionCall("x/raw", "")},
		{name: "2025 session: handler data a StructuredError without id", status: 200, code: 1051, parsed: true, dataHas: `"code":"INVALID_ARGUMENT"`, send: sessionCall("x/se", "")},
		{name: "2025 session: handler error too large to send", status: 200, code: 1054, parsed: true, onlyCID: true, send: sessionCall("x/huge", "")},
	}
}

// An error answering a request that names another user's session never
// carries that session's correlation id.
func TestHTTPErrorNeverCarriesAnotherUsersCorrelationID(t *testing.T) {
	srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
	h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Logger: quiet})
	ts := newServerHandler(t, h, streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Logger: quiet})(h))
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	resp := do(t, ts, request{body: initBody, header: as("alice-token")})
	readBody(t, resp)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	cidOf := func(r request) string {
		t.Helper()
		var b errorBody
		require.NoError(t, json.Unmarshal([]byte(readBody(t, do(t, ts, r))), &b))
		var data struct {
			CorrelationID string `json:"correlationId"`
		}
		require.NoError(t, json.Unmarshal(b.Error.Data, &data))
		require.NotEmpty(t, data.CorrelationID)
		return data.CorrelationID
	}
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	alice := cidOf(request{body: batch, session: sid, version: "2025-11-25", header: as("alice-token")})
	assert.Equal(t, alice, cidOf(request{body: `{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`, session: sid, version: "2025-11-25", header: as("alice-token")}),
		"the handler's errors and the server's carry the same connection id")
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		assert.NotEqual(t, alice, cidOf(request{method: method, body: batch, session: sid, version: "2025-11-25", header: as("bob-token")}), method)
	}
}
