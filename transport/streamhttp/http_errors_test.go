package streamhttp_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// errorPath is one way a client reaches an error body the Handler (or
// RequireBearer, CORS, the metadata endpoint) writes itself.
type errorPath struct {
	name   string
	status int
	code   int64
	// parsed: the error is answered after the body was parsed, so a
	// _meta.correlationId in the request's params is the error's.
	parsed bool
	// modern: the body is checked against the 2026-07-28 schema (else
	// against each 2025 revision's).
	modern  bool
	dataHas string // in error.data, besides the correlation id
	// onlyCID: error.data holds the correlation id and nothing else.
	onlyCID bool
	// send makes one exchange, with cid as the request's
	// _meta.correlationId when it is not "" (only parsed paths use it).
	// It returns the response, and the correlation id of the session the
	// request names when the error must carry it ("" otherwise).
	send func(t *testing.T, cid string) (*http.Response, string)
}

// errorBody is a JSON-RPC error body as the tests read it.
type errorBody struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Error   struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    jsontext.Value `json:"data"`
	} `json:"error"`
}

// correlated runs one exchange of p and returns the error's
// data.correlationId after checking the status, the code, the schema and
// the session's correlation id when the request names a known session.
func (p errorPath) correlated(t *testing.T, cid string) string {
	t.Helper()
	resp, sessionCID := p.send(t, cid)
	raw := readBody(t, resp)
	require.Equal(t, p.status, resp.StatusCode, raw)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var b errorBody
	require.NoError(t, json.Unmarshal([]byte(raw), &b, json.RejectUnknownMembers(true)), raw)
	assert.Equal(t, p.code, b.Error.Code, raw)
	var data struct {
		CorrelationID string `json:"correlationId"`
	}
	require.NoError(t, json.Unmarshal(b.Error.Data, &data), raw)
	require.NotEmpty(t, data.CorrelationID, raw)
	if p.onlyCID {
		assert.JSONEq(t, `{"correlationId":"`+data.CorrelationID+`"}`, string(b.Error.Data))
	}
	if p.dataHas != "" {
		assert.Contains(t, string(b.Error.Data), p.dataHas, "the data the error had is kept")
	}
	revs := []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
	if p.modern {
		revs = []string{mcptest.RevisionModern}
	}
	for _, rev := range revs {
		mcptest.ValidateServerMessage(t, rev, nil, []byte(raw))
	}
	if cid == "" && sessionCID != "" {
		assert.Equal(t, sessionCID, data.CorrelationID, "the session's correlation id: %s", raw)
	}
	return data.CorrelationID
}

// TestEveryHandlerErrorCarriesCorrelationID drives each error path of the
// streamable HTTP handler a client can reach (in this build): every error
// body carries a non-empty data.correlationId, the request's
// _meta.correlationId when the body was parsed and carries one, the
// session's when the request names a known session, and otherwise a fresh
// one per exchange.
func TestEveryHandlerErrorCarriesCorrelationID(t *testing.T) {
	paths := append(append(sharedErrorPaths(t), buildErrorPaths(t)...), mcpErrorPaths(t)...)
	seen := map[string]bool{}
	for _, p := range paths {
		require.False(t, seen[p.name], "duplicate row %q", p.name)
		seen[p.name] = true
		t.Run(p.name, func(t *testing.T) {
			a, b := p.correlated(t, ""), p.correlated(t, "")
			assert.NotEqual(t, a, b, "two exchanges without a correlation id of their own get two")
			if p.parsed {
				want := "cid-" + strings.ReplaceAll(p.name, " ", "-")
				assert.Equal(t, want, p.correlated(t, want))
			}
		})
	}
}

// metaCID returns the _meta member correlationId (with a leading comma)
// for cid, or "".
func metaCID(cid string) string {
	if cid == "" {
		return ""
	}
	return `,"correlationId":"` + cid + `"`
}

// modernBody returns a 2026-07-28 request (id 7, method echo) whose _meta
// holds members and cid's correlationId.
func modernBody(members, cid string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"echo","params":{"_meta":{` + members + metaCID(cid) + `}}}`
}

const (
	pvMember   = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	capsMember = `"io.modelcontextprotocol/clientCapabilities":{}`
)

// plainSend returns a send that makes r (its body from body(cid)) to srv.
func plainSend(srv *httptest.Server, r request, body func(cid string) string) func(*testing.T, string) (*http.Response, string) {
	return func(t *testing.T, cid string) (*http.Response, string) {
		rr := r
		if body != nil {
			rr.body = body(cid)
		}
		return do(t, srv, rr), ""
	}
}

// rawExchange writes head and body on a new connection to addr and reads
// the response.
func rawExchange(t *testing.T, addr, head, body string, hold time.Duration) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprint(conn, head+"\r\n"+body)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second+hold)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	return resp
}

// sharedErrorPaths are the error paths of both builds.
func sharedErrorPaths(t *testing.T) []errorPath {
	url := func(h http.Handler) *httptest.Server {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	plain, _, _ := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions})
	modernHdr := func(extra map[string]string) map[string]string { return modernHeaders("echo", "", extra) }

	small, _, _ := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions, MaxBodyBytes: 64})
	timed, _, _ := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions, BodyReadTimeout: 100 * time.Millisecond})

	closed, closedH, _ := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions})
	require.NoError(t, closedH.Close())

	// One slow request holds the only stream (MaxStreams), and the only
	// stream of its peer (MaxStreamsPerPeer).
	holdStream := func(o *streamhttp.Options) *httptest.Server {
		srv, h, f := startHTTP(t, o)
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp := do(t, srv, request{body: modernRequest(`1`, "slow", "", ""), version: modern, header: modernHeaders("slow", "", nil)})
			readBody(t, resp)
		}()
		require.Equal(t, "slow", <-f.started)
		t.Cleanup(func() { close(f.gate); <-done })
		require.Equal(t, 1, h.StreamCount())
		return srv
	}
	maxStreams := holdStream(&streamhttp.Options{SupportedVersions: modernVersions, MaxStreams: 1})
	maxPeer := holdStream(&streamhttp.Options{SupportedVersions: modernVersions, MaxStreamsPerPeer: 1})

	inner := streamhttp.NewHandler(&streamhttp.Options{Serve: newFakeServer().serve, Logger: quiet})
	t.Cleanup(func() { _ = inner.Close() })
	protected := url(streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Scopes: []string{"mcp:write"}, Logger: quiet})(inner))
	bearer := func(token string) map[string]string { return map[string]string{"Authorization": token} }
	cors := url(streamhttp.CORS(&streamhttp.CORSOptions{AllowedOrigins: []string{"https://app.example"}})(inner))
	metadata := url(streamhttp.ProtectedResourceMetadataHandler(&streamhttp.ProtectedResourceMetadata{Resource: testResource, AuthorizationServers: []string{"https://auth.example"}}))

	return []errorPath{
		{name: "Host not allowed", status: 403, code: -32000, send: plainSend(plain, request{header: map[string]string{"Host": "evil.example"}}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "Origin not allowed", status: 403, code: -32000, send: plainSend(plain, request{header: map[string]string{"Origin": "https://evil.example"}}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "GET naming revision 2026-07-28", status: 405, code: -32000, send: plainSend(plain, request{method: http.MethodGet, version: modern}, nil)},
		{name: "method not allowed", status: 405, code: -32000, send: plainSend(plain, request{method: http.MethodPut}, nil)},
		{name: "Content-Type not JSON", status: 415, code: -32000, send: plainSend(plain, request{header: map[string]string{"Content-Type": "text/plain"}}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "Accept lacks text/event-stream", status: 406, code: -32000, send: plainSend(plain, request{header: map[string]string{"Accept": "application/json"}}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "malformed JSON", status: 400, code: -32700, send: plainSend(plain, request{}, func(string) string { return `{"jsonrpc":"2.0","id":1,` })},
		{name: "not a JSON-RPC request", status: 400, code: -32600, send: plainSend(plain, request{}, func(string) string { return `{"jsonrpc":"1.0","id":3,"method":"echo"}` })},
		{name: "body too large", status: 413, code: -32600, send: plainSend(small, request{}, func(cid string) string {
			return modernBody(pvMember+","+capsMember+`,"pad":"`+strings.Repeat("x", 64)+`"`, cid)
		})},
		{name: "body not received in time", status: 408, code: -32000, send: func(t *testing.T, _ string) (*http.Response, string) {
			head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 4096\r\n"
			return rawExchange(t, timed.Listener.Addr().String(), head, "{", 0), ""
		}},
		{name: "reading the body failed", status: 400, code: -32000, send: func(t *testing.T, _ string) (*http.Response, string) {
			head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n"
			return rawExchange(t, plain.Listener.Addr().String(), head, "zz\r\n{}\r\n0\r\n\r\n", 0), ""
		}},
		{name: "shutting down", status: 503, code: -32000, parsed: true, send: plainSend(closed, request{version: modern, header: modernHdr(nil)}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "MaxStreams", status: 503, code: -32000, dataHas: `"limit":"MaxStreams"`, send: plainSend(maxStreams, request{version: modern, header: modernHdr(nil)}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "MaxStreamsPerPeer", status: 429, code: -32000, dataHas: `"limit":"MaxStreamsPerPeer"`, send: plainSend(maxPeer, request{version: modern, header: modernHdr(nil)}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "2026-07-28 batch refused", status: 400, code: -32600, modern: true, send: plainSend(plain, request{version: modern, header: modernHdr(nil)}, func(cid string) string {
			one := modernBody(pvMember+","+capsMember, cid)
			return "[" + one + "," + strings.Replace(one, `"id":7`, `"id":8`, 1) + "]"
		})},
		{name: "2026-07-28 _meta lacks clientCapabilities", status: 400, code: -32602, parsed: true, modern: true, send: plainSend(plain, request{version: modern, header: modernHdr(nil)}, func(cid string) string { return modernBody(pvMember, cid) })},
		{name: "2026-07-28 header differs from _meta", status: 400, code: -32020, parsed: true, modern: true, send: plainSend(plain, request{version: "2025-11-25", header: modernHdr(nil)}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "2026-07-28 Mcp-Method differs", status: 400, code: -32020, parsed: true, modern: true, send: plainSend(plain, request{version: modern, header: modernHeaders("tools/list", "", nil)}, func(cid string) string { return modernBody(pvMember+","+capsMember, cid) })},
		{name: "2026-07-28 unsupported revision", status: 400, code: -32022, parsed: true, modern: true, dataHas: `"requested":"v999.0.0"`, send: plainSend(plain, request{version: "v999.0.0", header: modernHdr(nil)}, func(cid string) string {
			return modernBody(`"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+capsMember, cid)
		})},
		{name: "bearer token missing", status: 401, code: -32000, send: plainSend(protected, request{}, func(string) string { return initBody })},
		{name: "bearer credentials malformed", status: 400, code: -32000, send: plainSend(protected, request{header: bearer("Bearer a b")}, func(string) string { return initBody })},
		{name: "bearer token invalid", status: 401, code: -32000, send: plainSend(protected, request{header: bearer("Bearer unknown-token")}, func(string) string { return initBody })},
		{name: "bearer token verification failed", status: 500, code: -32000, send: plainSend(protected, request{header: bearer("Bearer broken-token")}, func(string) string { return initBody })},
		{name: "bearer token names nobody", status: 401, code: -32000, send: plainSend(protected, request{header: bearer("Bearer nobody-token")}, func(string) string { return initBody })},
		{name: "bearer token lacks a scope", status: 403, code: -32000, send: plainSend(protected, request{header: bearer("Bearer bob-token")}, func(string) string { return initBody })},
		{name: "CORS preflight from an origin not allowed", status: 403, code: -32000, send: plainSend(cors, request{method: http.MethodOptions, header: map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}}, nil)},
		{name: "metadata endpoint method not allowed", status: 405, code: -32000, send: plainSend(metadata, request{}, func(string) string { return "{}" })},
	}
}

// Each refusal the handler logs names the correlation id its error body
// carries, so that an operator can find the exchange a client reports.
func TestRefusalLogNamesCorrelationID(t *testing.T) {
	var logs exampletest.SafeBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, _, _ := startHTTP(t, &streamhttp.Options{Logger: logger, SupportedVersions: modernVersions})
	inner := streamhttp.NewHandler(&streamhttp.Options{Serve: newFakeServer().serve, Logger: quiet})
	t.Cleanup(func() { _ = inner.Close() })
	protected := httptest.NewServer(streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Logger: logger})(inner))
	t.Cleanup(protected.Close)
	cases := []struct {
		name string
		srv  *httptest.Server
		r    request
		log  string
	}{
		{name: "Host", srv: srv, r: request{body: initBody, header: map[string]string{"Host": "evil.example"}}, log: "Host not allowed"},
		{name: "Origin", srv: srv, r: request{body: initBody, header: map[string]string{"Origin": "https://evil.example"}}, log: "Origin not allowed"},
		{name: "bearer token invalid", srv: protected, r: request{body: initBody, header: map[string]string{"Authorization": "Bearer unknown-token"}}, log: "bearer token refused"},
		{name: "bearer verification failed", srv: protected, r: request{body: initBody, header: map[string]string{"Authorization": "Bearer broken-token"}}, log: "token verification failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := do(t, c.srv, c.r)
			var b errorBody
			require.NoError(t, json.Unmarshal([]byte(readBody(t, resp)), &b))
			var data struct {
				CorrelationID string `json:"correlationId"`
			}
			require.NoError(t, json.Unmarshal(b.Error.Data, &data))
			require.NotEmpty(t, data.CorrelationID)
			var line string
			for l := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(l, c.log) && strings.Contains(l, "correlationId="+data.CorrelationID) {
					line = l
				}
			}
			assert.NotEmpty(t, line, "a log line %q naming correlationId=%s in\n%s", c.log, data.CorrelationID, logs.String())
		})
	}
}
