package streamhttp_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

var modeNames = map[streamhttp.ResponseMode]string{
	streamhttp.ResponseAuto: "auto", streamhttp.ResponseSSE: "sse", streamhttp.ResponseJSON: "json",
}

const modern = "2026-07-28"

// modernVersions are the SupportedVersions of the modern tests.
var modernVersions = []string{modern, "2025-11-25", "2025-06-18", "2025-03-26"}

const fullMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

// modernRequest returns a modern request body: params holds members before
// _meta (may be empty), meta the _meta member (fullMeta when "").
func modernRequest(id, method, params, meta string) string {
	if meta == "" {
		meta = fullMeta
	}
	if params != "" {
		params += ","
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + params + meta + `}}`
}

// modernHeaders returns the routing headers of a modern request, with
// extra set over them ("" deletes).
func modernHeaders(method, name string, extra map[string]string) map[string]string {
	h := map[string]string{"Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// rpcAnswer is a JSON-RPC response as the tests read it.
type rpcAnswer struct {
	ID     jsontext.Value `json:"id"`
	Result jsontext.Value `json:"result"`
	Error  *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    jsontext.Value `json:"data"`
	} `json:"error"`
}

func decodeAnswer(t *testing.T, body string) rpcAnswer {
	t.Helper()
	var a rpcAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a, json.RejectUnknownMembers(false)), body)
	return a
}

func b64(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }

// Each check a modern request passes before Serve sees it, in the order
// the conformance suite accepts; errors are 400 and echo the request id.
func TestHTTPModernChecks(t *testing.T) {
	meta := func(members string) string { return `"_meta":{` + members + `}` }
	const pv = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	cases := []struct {
		name    string
		body    string
		version string // MCP-Protocol-Version ("-": none)
		header  map[string]string
		code    int64  // 0: served (200 with a result)
		msgHas  string // in the error message
	}{
		{name: "served", body: modernRequest(`7`, "echo", "", ""), header: modernHeaders("echo", "", nil)},
		{name: "clientInfo is optional", body: modernRequest(`7`, "echo", "", meta(pv+","+caps)), header: modernHeaders("echo", "", nil)},
		{name: "no params", body: `{"jsonrpc":"2.0","id":7,"method":"echo"}`, header: modernHeaders("echo", "", nil), code: -32602, msgHas: "_meta"},
		{name: "params by position", body: `{"jsonrpc":"2.0","id":7,"method":"echo","params":[1]}`, header: modernHeaders("echo", "", nil), code: -32602},
		{name: "no _meta", body: `{"jsonrpc":"2.0","id":7,"method":"echo","params":{}}`, header: modernHeaders("echo", "", nil), code: -32602},
		{name: "no protocolVersion", body: modernRequest(`7`, "echo", "", meta(caps)), header: modernHeaders("echo", "", nil), code: -32602, msgHas: "protocolVersion"},
		{name: "no clientCapabilities", body: modernRequest(`7`, "echo", "", meta(pv)), header: modernHeaders("echo", "", nil), code: -32602, msgHas: "clientCapabilities"},
		{name: "protocolVersion not a string", body: modernRequest(`7`, "echo", "", meta(`"io.modelcontextprotocol/protocolVersion":20260728,`+caps)), header: modernHeaders("echo", "", nil), code: -32602},
		{name: "string id echoed", body: modernRequest(`"abc"`, "echo", "", meta(pv)), header: modernHeaders("echo", "", nil), code: -32602},
		{name: "header missing", body: modernRequest(`7`, "echo", "", ""), version: "-", header: modernHeaders("echo", "", nil), code: -32020, msgHas: "MCP-Protocol-Version"},
		{name: "header differs from _meta", body: modernRequest(`7`, "echo", "", meta(`"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+caps)), header: modernHeaders("echo", "", nil), code: -32020},
		{name: "legacy header, modern _meta", body: modernRequest(`7`, "echo", "", ""), version: "2025-11-25", header: modernHeaders("echo", "", nil), code: -32020},
		{name: "unsupported version", body: modernRequest(`7`, "echo", "", meta(`"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+caps)), version: "v999.0.0", header: modernHeaders("echo", "", nil), code: -32022},
		{name: "legacy version in modern form", body: modernRequest(`7`, "echo", "", meta(`"io.modelcontextprotocol/protocolVersion":"2025-11-25",`+caps)), version: "2025-11-25", header: modernHeaders("echo", "", nil), code: -32022},
		{name: "Mcp-Method missing", body: modernRequest(`7`, "echo", "", ""), code: -32020, msgHas: "Mcp-Method"},
		{name: "Mcp-Method differs", body: modernRequest(`7`, "echo", "", ""), header: modernHeaders("tools/list", "", nil), code: -32020},
		{name: "Mcp-Method values are case-sensitive", body: modernRequest(`7`, "echo", "", ""), header: modernHeaders("ECHO", "", nil), code: -32020},
		{name: "header names are case-insensitive", body: modernRequest(`7`, "echo", "", ""), header: map[string]string{"mcp-method": "echo"}},
		{name: "whitespace is trimmed", body: modernRequest(`7`, "echo", "", ""), header: modernHeaders(" \techo  ", "", nil)},
		{name: "base64 Mcp-Method", body: modernRequest(`7`, "echo", "", ""), header: modernHeaders(b64("echo"), "", nil)},
		{name: "tools/call", body: modernRequest(`7`, "tools/call", `"name":"add","arguments":{}`, ""), header: modernHeaders("tools/call", "add", nil)},
		{name: "tools/call Mcp-Name missing", body: modernRequest(`7`, "tools/call", `"name":"add"`, ""), header: modernHeaders("tools/call", "", nil), code: -32020, msgHas: "Mcp-Name"},
		{name: "tools/call Mcp-Name differs", body: modernRequest(`7`, "tools/call", `"name":"add"`, ""), header: modernHeaders("tools/call", "wrong_tool_name", nil), code: -32020},
		{name: "tools/call Mcp-Name with whitespace", body: modernRequest(`7`, "tools/call", `"name":"add"`, ""), header: modernHeaders("tools/call", "  add  ", nil)},
		{name: "tools/call Mcp-Name base64", body: modernRequest(`7`, "tools/call", `"name":"ädd"`, ""), header: modernHeaders("tools/call", b64("ädd"), nil)},
		{name: "tools/call Mcp-Name against an escaped name", body: modernRequest(`7`, "tools/call", `"name":"\u0061dd"`, ""), header: modernHeaders("tools/call", "add", nil)},
		{name: "tools/call Mcp-Name differs from an escaped name", body: modernRequest(`7`, "tools/call", `"name":"\u0061dd"`, ""), header: modernHeaders("tools/call", "\\u0061dd", nil), code: -32020},
		{name: "tools/call Mcp-Name bad base64", body: modernRequest(`7`, "tools/call", `"name":"Hello"`, ""), header: modernHeaders("tools/call", "=?base64?SGVsbG8?=", nil), code: -32020},
		{name: "tools/call Mcp-Name without suffix is literal", body: modernRequest(`7`, "tools/call", `"name":"=?base64?SGVsbG8="`, ""), header: modernHeaders("tools/call", "=?base64?SGVsbG8=", nil)},
		{name: "tools/call Mcp-Name but no name", body: modernRequest(`7`, "tools/call", `"arguments":{}`, ""), header: modernHeaders("tools/call", "add", nil), code: -32020},
		{name: "tools/call names nothing, no Mcp-Name", body: modernRequest(`7`, "tools/call", `"arguments":{}`, ""), header: modernHeaders("tools/call", "", nil)},
		{name: "prompts/get", body: modernRequest(`7`, "prompts/get", `"name":"greet"`, ""), header: modernHeaders("prompts/get", "greet", nil)},
		{name: "prompts/get Mcp-Name differs", body: modernRequest(`7`, "prompts/get", `"name":"greet"`, ""), header: modernHeaders("prompts/get", "Greet", nil), code: -32020},
		{name: "resources/read", body: modernRequest(`7`, "resources/read", `"uri":"file:///a b.txt"`, ""), header: modernHeaders("resources/read", "file:///a b.txt", nil)},
		{name: "resources/read Mcp-Name differs", body: modernRequest(`7`, "resources/read", `"uri":"file:///a"`, ""), header: modernHeaders("resources/read", "file:///b", nil), code: -32020},
		{name: "tasks/get", body: modernRequest(`7`, "tasks/get", `"taskId":"t-1"`, ""), header: modernHeaders("tasks/get", "t-1", nil)},
		{name: "tasks/get Mcp-Name differs", body: modernRequest(`7`, "tasks/get", `"taskId":"t-1"`, ""), header: modernHeaders("tasks/get", "t-2", nil), code: -32020},
		{name: "integers compare numerically", body: modernRequest(`7`, "tasks/get", `"taskId":42`, ""), header: modernHeaders("tasks/get", "042", nil)},
		// Order: _meta, then the version header, then the revision, then Mcp-*.
		{name: "order: _meta before header", body: modernRequest(`7`, "echo", "", meta(pv)), version: "-", code: -32602},
		{name: "order: header before revision", body: modernRequest(`7`, "echo", "", meta(`"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+caps)), code: -32020},
		{name: "order: revision before Mcp-Method", body: modernRequest(`7`, "echo", "", meta(`"io.modelcontextprotocol/protocolVersion":"v999.0.0",`+caps)), version: "v999.0.0", code: -32022},
	}
	for _, stateless := range []bool{false, true} {
		srv, h, _ := startHTTP(t, &streamhttp.Options{Stateless: stateless, SupportedVersions: modernVersions})
		for _, tc := range cases {
			t.Run(map[bool]string{false: "stateful/", true: "stateless/"}[stateless]+tc.name, func(t *testing.T) {
				v := tc.version
				if v == "" {
					v = modern
				}
				hdr := map[string]string{}
				for k, val := range tc.header {
					hdr[k] = val
				}
				if v == "-" {
					v = ""
				}
				resp := do(t, srv, request{body: tc.body, version: v, header: hdr})
				body := readBody(t, resp)
				assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
				a := decodeAnswer(t, body)
				var req struct {
					ID jsontext.Value `json:"id"`
				}
				require.NoError(t, json.Unmarshal([]byte(tc.body), &req, json.RejectUnknownMembers(false)))
				assert.Equal(t, string(req.ID), string(a.ID), "the id is echoed")
				if tc.code == 0 {
					assert.Equal(t, http.StatusOK, resp.StatusCode, body)
					assert.Nil(t, a.Error, body)
					assert.NotNil(t, a.Result, body)
					return
				}
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
				require.NotNil(t, a.Error, body)
				assert.Equal(t, tc.code, a.Error.Code, body)
				assert.Contains(t, a.Error.Message, tc.msgHas)
			})
		}
		assert.Zero(t, h.SessionCount())
	}
}

// -32022 carries the supported versions and echoes the requested one;
// NewServerHandler supports every revision of package mcp.
func TestHTTPModernUnsupportedVersionData(t *testing.T) {
	srv, _, _ := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions})
	body := modernRequest(`301`, "server/discover", "", strings.Replace(fullMeta, modern, "v999.0.0", 1))
	resp := do(t, srv, request{body: body, version: "v999.0.0", header: modernHeaders("server/discover", "", nil)})
	rb := readBody(t, resp)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, rb)
	a := decodeAnswer(t, rb)
	require.NotNil(t, a.Error)
	assert.Equal(t, int64(-32022), a.Error.Code)
	assert.Equal(t, "301", string(a.ID))
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	require.NoError(t, json.Unmarshal(a.Error.Data, &data))
	assert.Equal(t, modernVersions, data.Supported)
	assert.Equal(t, "v999.0.0", data.Requested)
}

// A modern request is served sessionless in both modes: Serve gets a
// StatelessRequest with the revision, no session id is minted, and
// Mcp-Session-Id and Last-Event-ID are ignored.
func TestHTTPModernSessionless(t *testing.T) {
	cases := []struct {
		name      string
		stateless bool
		method    string
		header    map[string]string
	}{
		{name: "stateful", method: "stateless"},
		{name: "stateless", stateless: true, method: "stateless"},
		{name: "stateful, foreign session id ignored", method: "stateless",
			header: map[string]string{"Mcp-Session-Id": "no-such-session", "Last-Event-ID": "1_1"}},
		{name: "stateless, foreign session id ignored", stateless: true, method: "stateless",
			header: map[string]string{"Mcp-Session-Id": "no-such-session"}},
		{name: "initialize in modern form", method: "initialize"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, h, f := startHTTP(t, &streamhttp.Options{Stateless: tc.stateless, SupportedVersions: modernVersions})
			for i := range 2 {
				resp := do(t, srv, request{body: modernRequest(`1`, tc.method, "", ""), version: modern,
					header: modernHeaders(tc.method, "", tc.header)})
				body := readBody(t, resp)
				require.Equal(t, http.StatusOK, resp.StatusCode, body)
				assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
				if tc.method == "stateless" {
					assert.JSONEq(t, `{"stateless":true,"version":"2026-07-28"}`, string(decodeAnswer(t, body).Result))
				}
				assert.Zero(t, h.SessionCount())
				require.Eventually(t, func() bool { s, e := f.counts(); return s == i+1 && e == i+1 },
					time.Second, time.Millisecond, "one session per request, ended with it")
			}
			f.mu.Lock()
			ctx := f.ctxs[0]
			f.mu.Unlock()
			sr, ok := transport.StatelessRequestFromContext(ctx)
			assert.True(t, ok)
			assert.Equal(t, modern, sr.ProtocolVersion)
		})
	}
}

// Batches are refused and notifications accepted without a session.
func TestHTTPModernBatchesAndNotifications(t *testing.T) {
	cases := []struct {
		name    string
		body    string
		version string
		status  int
		code    int64
	}{
		{name: "batch with modern _meta", body: "[" + modernRequest(`1`, "echo", "", "") + "]", version: "2025-03-26", status: http.StatusBadRequest, code: -32600},
		{name: "batch with modern header", body: `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, version: modern, status: http.StatusBadRequest, code: -32600},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,` + fullMeta + `}}`, version: modern, status: http.StatusAccepted},
		{name: "notification by header only", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, version: modern, status: http.StatusAccepted},
		{name: "response", body: `{"jsonrpc":"2.0","id":1,"result":{}}`, version: modern, status: http.StatusAccepted},
	}
	for _, stateless := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(map[bool]string{false: "stateful/", true: "stateless/"}[stateless]+tc.name, func(t *testing.T) {
				srv, h, f := startHTTP(t, &streamhttp.Options{Stateless: stateless, SupportedVersions: modernVersions})
				resp := do(t, srv, request{body: tc.body, version: tc.version})
				body := readBody(t, resp)
				assert.Equal(t, tc.status, resp.StatusCode, body)
				if tc.code != 0 {
					a := decodeAnswer(t, body)
					require.NotNil(t, a.Error)
					assert.Equal(t, tc.code, a.Error.Code)
				} else {
					assert.Empty(t, body)
				}
				assert.Zero(t, h.SessionCount())
				sessions, _ := f.counts()
				assert.Zero(t, sessions)
			})
		}
	}
}

// The HTTP status of a modern error response comes from its code, in
// every response mode.
func TestHTTPModernErrorStatus(t *testing.T) {
	cases := []struct {
		code   int64
		status int
	}{
		{-32601, http.StatusNotFound},
		{-32020, http.StatusBadRequest},
		{-32021, http.StatusBadRequest},
		{-32022, http.StatusBadRequest},
		{-32602, http.StatusOK},
		{-32603, http.StatusOK},
	}
	for _, mode := range []streamhttp.ResponseMode{streamhttp.ResponseAuto, streamhttp.ResponseSSE, streamhttp.ResponseJSON} {
		srv, _, _ := startHTTP(t, &streamhttp.Options{ResponseMode: mode, SupportedVersions: modernVersions})
		for _, tc := range cases {
			t.Run(modeNames[mode]+"/"+strconv.FormatInt(tc.code, 10), func(t *testing.T) {
				params := `"code":` + strconv.FormatInt(tc.code, 10)
				resp := do(t, srv, request{body: modernRequest(`"e1"`, "fail", params, ""), version: modern, header: modernHeaders("fail", "", nil)})
				body := readBody(t, resp)
				assert.Equal(t, tc.status, resp.StatusCode, body)
				if mode == streamhttp.ResponseSSE && tc.status == http.StatusOK {
					// An error without an HTTP status of its own keeps the mode's form.
					assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
					evs := sseEvents(t, strings.NewReader(body), -1)
					require.Len(t, evs, 1)
					body = evs[0].data
				} else {
					assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				}
				a := decodeAnswer(t, body)
				require.NotNil(t, a.Error, body)
				assert.Equal(t, tc.code, a.Error.Code)
				assert.Equal(t, `"e1"`, string(a.ID))
			})
		}
		// A result keeps the mode's form.
		resp := do(t, srv, request{body: modernRequest(`1`, "echo", "", ""), version: modern, header: modernHeaders("echo", "", nil)})
		body := readBody(t, resp)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		if mode == streamhttp.ResponseSSE {
			assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			assert.Contains(t, body, `data: {"jsonrpc":"2.0","id":1,"result"`)
		} else {
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		}
	}
}

// subscriptions/listen: an SSE stream that starts with the server's
// acknowledgement (in every response mode), stays open, and ends when the
// client goes away, which cancels the request.
func TestHTTPModernListen(t *testing.T) {
	for _, mode := range []streamhttp.ResponseMode{streamhttp.ResponseAuto, streamhttp.ResponseSSE, streamhttp.ResponseJSON} {
		for _, stateless := range []bool{false, true} {
			t.Run(map[bool]string{false: "stateful/", true: "stateless/"}[stateless]+modeNames[mode], func(t *testing.T) {
				srv, _, f := startHTTP(t, &streamhttp.Options{Stateless: stateless, ResponseMode: mode,
					SupportedVersions: modernVersions, SSEAfter: 10 * time.Millisecond})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				resp := doCtx(t, ctx, srv, request{body: modernRequest(`"sub-1"`, "subscriptions/listen", `"notifications":{"toolsListChanged":true}`, ""),
					version: modern, header: modernHeaders("subscriptions/listen", "", nil)})
				defer resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
				assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
				assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
				evs := sseEvents(t, resp.Body, 1)
				require.Len(t, evs, 1)
				assert.Contains(t, evs[0].data, `"method":"notifications/subscriptions/acknowledged"`)
				assert.Empty(t, evs[0].id, "modern events carry no ids")
				require.Equal(t, "listen", <-f.started)
				select {
				case <-f.listenEnded:
					t.Fatal("the listen request ended while the client was there")
				case <-time.After(50 * time.Millisecond):
				}
				cancel()
				select {
				case <-f.listenEnded:
				case <-time.After(5 * time.Second):
					t.Fatal("the client's disconnect did not cancel the listen request")
				}
			})
		}
	}
}

// A silent listen stream carries keep-alive comments.
func TestHTTPModernListenKeepAlive(t *testing.T) {
	srv, _, f := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions, KeepAlive: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := doCtx(t, ctx, srv, request{body: modernRequest(`1`, "subscriptions/listen", "", ""), version: modern,
		header: modernHeaders("subscriptions/listen", "", nil)})
	defer resp.Body.Close()
	require.Equal(t, "listen", <-f.started)
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	deadline := time.After(5 * time.Second)
	for keepAlives := 0; keepAlives < 2; {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the stream ended: %q", seen)
			seen = append(seen, l)
			if l == ": keep-alive" {
				keepAlives++
			}
		case <-deadline:
			t.Fatalf("no keep-alive comments: %q", seen)
		}
	}
	assert.Contains(t, seen[0], "notifications/subscriptions/acknowledged", "the acknowledgement comes first")
}

// Shutdown does not wait for listen requests, which only the client ends.
func TestHTTPModernShutdownEndsListens(t *testing.T) {
	srv, h, f := startHTTP(t, &streamhttp.Options{SupportedVersions: modernVersions})
	resp := do(t, srv, request{body: modernRequest(`1`, "subscriptions/listen", "", ""), version: modern,
		header: modernHeaders("subscriptions/listen", "", nil)})
	defer resp.Body.Close()
	require.Equal(t, "listen", <-f.started)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, h.Shutdown(ctx))
	sseEvents(t, resp.Body, -1) // the stream ends
	select {
	case <-f.listenEnded:
	case <-time.After(5 * time.Second):
		t.Fatal("the listen request was not cancelled")
	}
}

// A modern POST served in its POST (Options.ServeRequest) hands the
// server its own reading of the request — the message and the
// classifier's reading of its _meta — so that the server does not read the body
// again; the reading is that of the body.
func TestHTTPModernHandsItsReadingToServeRequest(t *testing.T) {
	type reading struct {
		id, method string
		ok         bool
		maxDepth   int
		reading    revision.Reading
	}
	got := make(chan reading, 1)
	h := streamhttp.NewHandler(&streamhttp.Options{
		SupportedVersions: modernVersions,
		MaxDepth:          40,
		Serve:             func(ctx context.Context, t transport.Transport) error { <-ctx.Done(); return nil },
		ServeRequest: func(ctx context.Context, t transport.Transport, msg []byte) error {
			var r reading
			if c, ok := t.(handoff.Carrier); ok {
				if x := c.Handoff(); x != nil {
					r.ok, r.maxDepth, r.reading = true, int(x.MaxDepth), x.Reading
					r.id, r.method = string(x.Msg.ID), x.Msg.Method
				}
			}
			got <- r
			return t.Write(ctx, []byte(`{"jsonrpc":"2.0","id":7,"result":{}}`))
		},
	})
	srv := newServer(t, h)
	resp := do(t, srv, request{body: modernRequest(`7`, "tools/call", `"name":"add","arguments":{}`, ""), version: modern,
		header: modernHeaders("tools/call", "add", nil)})
	assert.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
	r := <-got
	require.True(t, r.ok, "the session has no reading of the request")
	assert.Equal(t, "7", r.id)
	assert.Equal(t, "tools/call", r.method)
	assert.Equal(t, 40, r.maxDepth)
	assert.True(t, r.reading.Marked)
	assert.Nil(t, r.reading.Refusal)
	assert.Equal(t, modern, r.reading.Version)
	assert.NotZero(t, r.reading.Caps, "the located capabilities ride along, for the server to decode")
}

// An mcp.Server behind NewServerHandler (each modern POST served on its
// goroutine, ServeRequest) gives its error answers their HTTP status
// through the request's hand-off, in every response mode: a method not
// found 404, an error of the method 200, a result 200.
func TestHTTPModernServerErrorStatus(t *testing.T) {
	for _, mode := range []streamhttp.ResponseMode{streamhttp.ResponseAuto, streamhttp.ResponseSSE, streamhttp.ResponseJSON} {
		srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
		h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Logger: quiet, ResponseMode: mode})
		t.Cleanup(func() { _ = h.Close() })
		hs := newServer(t, h)
		for _, tc := range []struct {
			name, method, params string
			status               int
			code                 int64
		}{
			{"not found", "acme/nothing", "", http.StatusNotFound, -32601},
			{"unknown tool", "tools/call", `"name":"nope","arguments":{}`, http.StatusOK, -32602},
			{"result", "tools/call", `"name":"echo","arguments":{"message":"hi"}`, http.StatusOK, 0},
		} {
			t.Run(modeNames[mode]+"/"+tc.name, func(t *testing.T) {
				name := ""
				if tc.method == "tools/call" {
					name = strings.Split(tc.params, `"`)[3]
				}
				resp := do(t, hs, request{body: modernRequest(`"s1"`, tc.method, tc.params, ""), version: modern, header: modernHeaders(tc.method, name, nil)})
				body := readBody(t, resp)
				assert.Equal(t, tc.status, resp.StatusCode, body)
				if resp.Header.Get("Content-Type") == "text/event-stream" {
					evs := sseEvents(t, strings.NewReader(body), -1)
					require.NotEmpty(t, evs)
					body = evs[len(evs)-1].data
				}
				a := decodeAnswer(t, body)
				if tc.code == 0 {
					assert.Nil(t, a.Error, body)
					return
				}
				require.NotNil(t, a.Error, body)
				assert.Equal(t, tc.code, a.Error.Code)
			})
		}
	}
}

// wrapped is a user's transport wrapper that follows the documented
// convention: it forwards MessageContexter and implements Unwrap.
type wrapped struct{ transport.Transport }

func (w wrapped) MessageContext(parent context.Context) context.Context {
	return w.Transport.(transport.MessageContexter).MessageContext(parent)
}

func (w wrapped) Unwrap() transport.Transport { return w.Transport }

// A wrapper of the session transport (Options.Serve wrapping it before
// Server.Run) keeps a 2026-07-28 error answer's HTTP status when it
// implements Unwrap; without Unwrap the answer goes out with status 200,
// as transport.Transport documents.
func TestHTTPModernStatusThroughAWrapper(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wrap   func(transport.Transport) transport.Transport
		status int
	}{
		{"unwrapped", func(t transport.Transport) transport.Transport { return t }, http.StatusNotFound},
		{"wrapper with Unwrap", func(t transport.Transport) transport.Transport { return wrapped{t} }, http.StatusNotFound},
		{"wrapper with Unwrap, twice", func(t transport.Transport) transport.Transport { return wrapped{wrapped{t}} }, http.StatusNotFound},
		{"wrapper without Unwrap", func(t transport.Transport) transport.Transport {
			return struct{ transport.Transport }{wrapped{t}}
		}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
			h := streamhttp.NewHandler(&streamhttp.Options{Logger: quiet, SupportedVersions: mcp.AllVersions(), ResponseMode: streamhttp.ResponseJSON,
				Serve: func(ctx context.Context, tr transport.Transport) error { return srv.Run(ctx, tc.wrap(tr)) }})
			t.Cleanup(func() { _ = h.Close() })
			hs := newServer(t, h)
			resp := do(t, hs, request{body: modernRequest(`"s1"`, "acme/nothing", "", ""), version: modern, header: modernHeaders("acme/nothing", "", nil)})
			body := readBody(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode, body)
			a := decodeAnswer(t, body)
			require.NotNil(t, a.Error, body)
			assert.EqualValues(t, -32601, a.Error.Code)
		})
	}
}

// rewriting is a wrapper with Unwrap whose Read returns other bytes than
// the wrapped Read: the method acme/nothing becomes tools/list.
type rewriting struct{ wrapped }

func (w rewriting) Read(ctx context.Context) ([]byte, error) {
	msg, err := w.Transport.Read(ctx)
	if err != nil {
		return nil, err
	}
	return []byte(strings.Replace(string(msg), `"acme/nothing"`, `"tools/list"`, 1)), nil
}

func (w rewriting) Unwrap() transport.Transport { return w.Transport }

// A wrapper that changes what Read returns is served as it returns it: the
// hand-off the wrapped transport made for its own bytes is not used for
// other ones.
func TestHTTPModernWrapperThatRewritesIsServedAsItReads(t *testing.T) {
	srv := mcp.NewServer(mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho)))
	h := streamhttp.NewHandler(&streamhttp.Options{Logger: quiet, SupportedVersions: mcp.AllVersions(), ResponseMode: streamhttp.ResponseJSON,
		Serve: func(ctx context.Context, tr transport.Transport) error {
			return srv.Run(ctx, rewriting{wrapped{tr}})
		}})
	t.Cleanup(func() { _ = h.Close() })
	hs := newServer(t, h)
	resp := do(t, hs, request{body: modernRequest(`"s1"`, "acme/nothing", "", ""), version: modern, header: modernHeaders("acme/nothing", "", nil)})
	body := readBody(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	a := decodeAnswer(t, body)
	assert.Nil(t, a.Error, body)
	assert.Contains(t, body, `"tools"`, "the rewritten method (tools/list) was served")
}
