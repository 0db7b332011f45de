package streamhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// fakeServer is a minimal JSON-RPC server for the HTTP transport tests. Its
// methods:
//
//	initialize   → {"protocolVersion": params.protocolVersion}
//	echo         → params
//	notify       → a notifications/message tied to the request, then {}
//	broadcast    → a notifications/message not tied to any request, then {}
//	ask          → a ping request to the client tied to the request; then
//	               the client's result
//	slow         → waits for the gate channel, then {}
//	poll         → CloseSSEStream, a tied notification, waits for the gate, {}
//	whoami       → {"subject": the TokenInfo's subject}
//	stateless    → {"stateless": bool, "version": the StatelessRequest's}
//	fail         → an error response with code params.code
//	subscriptions/listen → a notifications/subscriptions/acknowledged tied
//	               to the request, then waits for the gate ({}) or for the
//	               session's end (reported on listenEnded)
type fakeServer struct {
	gate        chan struct{}
	started     chan string // the method of each slow or poll call, when it starts
	listenEnded chan struct{}
	mu          sync.Mutex
	sessions    int
	ended       int
	waiters     map[string]chan jsontext.Value
	ctxs        []context.Context
}

func newFakeServer() *fakeServer {
	return &fakeServer{gate: make(chan struct{}), started: make(chan string, 16), listenEnded: make(chan struct{}, 16),
		waiters: map[string]chan jsontext.Value{}}
}

type rpcMsg struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      jsontext.Value `json:"id,omitzero"`
	Method  string         `json:"method,omitzero"`
	Params  jsontext.Value `json:"params,omitzero"`
	Result  jsontext.Value `json:"result,omitzero"`
	Error   jsontext.Value `json:"error,omitzero"`
}

func (f *fakeServer) serve(ctx context.Context, t transport.Transport) error {
	f.mu.Lock()
	f.sessions++
	f.ctxs = append(f.ctxs, ctx)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.ended++
		f.mu.Unlock()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer t.Close()
	for {
		msg, err := t.Read(ctx)
		if err != nil {
			return nil
		}
		mctx := ctx
		if mc, ok := t.(transport.MessageContexter); ok {
			mctx = mc.MessageContext(ctx)
		}
		var x *handoff.Request // where the answer's error code goes, as mcp.Server records its errors'
		if c, ok := t.(handoff.Carrier); ok {
			x = c.Handoff()
		}
		msg = bytes.Clone(msg)
		if bytes.HasPrefix(msg, []byte("[")) {
			var batch []rpcMsg
			if json.Unmarshal(msg, &batch) != nil {
				continue
			}
			var out []rpcMsg
			for _, m := range batch {
				if m.Method != "" && m.ID != nil {
					out = append(out, rpcMsg{JSONRPC: "2.0", ID: m.ID, Result: m.Params})
				}
			}
			b, _ := json.Marshal(out)
			_ = t.Write(mctx, b)
			continue
		}
		var m rpcMsg
		if json.Unmarshal(msg, &m) != nil {
			continue
		}
		if m.Method == "" { // a response from the client
			f.mu.Lock()
			ch := f.waiters[string(m.ID)]
			f.mu.Unlock()
			if ch != nil {
				ch <- m.Result
			}
			continue
		}
		if m.ID == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := f.handle(ctx, mctx, t, &m)
			b, _ := json.Marshal(rpcMsg{JSONRPC: "2.0", ID: m.ID, Result: res})
			if m.Method == "fail" {
				var p struct {
					Code int64 `json:"code"`
				}
				_ = json.Unmarshal(m.Params, &p)
				b, _ = json.Marshal(struct {
					JSONRPC string         `json:"jsonrpc"`
					ID      jsontext.Value `json:"id"`
					Error   any            `json:"error"`
				}{"2.0", m.ID, map[string]any{"code": p.Code, "message": "failed"}})
				if x != nil {
					x.SetErrorCode(p.Code)
				}
			}
			_ = t.Write(ctx, b) // responses are routed by id, whatever the context
		}()
	}
}

func (f *fakeServer) handle(ctx, mctx context.Context, t transport.Transport, m *rpcMsg) jsontext.Value {
	note := func(c context.Context, text string) {
		_ = t.Write(c, []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`+text+`"}}`))
	}
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		// A struct, not a map: json v2 does not order map keys.
		b, _ := json.Marshal(struct {
			ProtocolVersion string   `json:"protocolVersion"`
			Capabilities    struct{} `json:"capabilities"`
		}{ProtocolVersion: p.ProtocolVersion})
		return b
	case "echo":
		if m.Params != nil {
			return m.Params
		}
	case "notify":
		note(mctx, "related")
	case "broadcast":
		note(ctx, "unrelated")
	case "flood":
		var p struct {
			N int `json:"n"`
		}
		_ = json.Unmarshal(m.Params, &p)
		for range p.N {
			note(ctx, "flood")
		}
	case "ask":
		ch := make(chan jsontext.Value, 1)
		f.mu.Lock()
		f.waiters[`"s1"`] = ch
		f.mu.Unlock()
		if err := t.Write(mctx, []byte(`{"jsonrpc":"2.0","id":"s1","method":"ping"}`)); err != nil {
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			return b
		}
		select {
		case r := <-ch:
			return r
		case <-ctx.Done():
		}
	case "subscriptions/listen":
		_ = t.Write(mctx, []byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`))
		f.started <- "listen"
		select {
		case <-f.gate:
		case <-ctx.Done():
			f.listenEnded <- struct{}{}
		}
	case "slow":
		f.started <- "slow"
		select {
		case <-f.gate:
		case <-ctx.Done():
		}
	case "poll":
		if err := streamhttp.CloseSSEStream(mctx); err != nil {
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			return b
		}
		note(mctx, "while away")
		f.started <- "poll"
		select {
		case <-f.gate:
		case <-ctx.Done():
		}
	case "whoami":
		subject := ""
		if ti := streamhttp.TokenInfoFromContext(mctx); ti != nil {
			subject = ti.Subject
		}
		b, _ := json.Marshal(map[string]string{"subject": subject})
		return b
	case "peer":
		p, _ := transport.PeerFromContext(mctx)
		b, _ := json.Marshal(map[string]string{"key": p.Key, "addr": p.Addr.String()})
		return b
	case "stateless":
		sr, ok := transport.StatelessRequestFromContext(ctx)
		b, _ := json.Marshal(struct {
			Stateless bool   `json:"stateless"`
			Version   string `json:"version"`
		}{ok, sr.ProtocolVersion})
		return b
	}
	return jsontext.Value(`{}`)
}

func (f *fakeServer) counts() (sessions, ended int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions, f.ended
}

var quiet = slog.New(slog.DiscardHandler)

// startHTTP serves a fakeServer with opts (Serve and Logger are filled in).
func startHTTP(t *testing.T, opts *streamhttp.Options) (*httptest.Server, *streamhttp.Handler, *fakeServer) {
	t.Helper()
	f := newFakeServer()
	var o streamhttp.Options
	if opts != nil {
		o = *opts
	}
	o.Serve = f.serve
	if o.Logger == nil {
		o.Logger = quiet
	}
	h := streamhttp.NewHandler(&o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return srv, h, f
}

// newServer serves h on a test server closed at the end of the test.
func newServer(t *testing.T, h *streamhttp.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		srv.Close()
	})
	return srv
}

// request describes one raw HTTP request to the endpoint.
type request struct {
	method  string
	body    string
	header  map[string]string
	session string
	version string
}

func do(t *testing.T, srv *httptest.Server, r request) *http.Response {
	t.Helper()
	return doCtx(t, context.Background(), srv, r)
}

func doCtx(t *testing.T, ctx context.Context, srv *httptest.Server, r request) *http.Response {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodPost
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, srv.URL+"/mcp", body)
	require.NoError(t, err)
	switch r.method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
	}
	if r.version != "" {
		req.Header.Set("MCP-Protocol-Version", r.version)
	}
	for k, v := range r.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// initialize opens a session at revision version and returns its id.
func initialize(t *testing.T, srv *httptest.Server, version string) string {
	t.Helper()
	body := strings.Replace(initBody, "2025-11-25", version, 1)
	resp := do(t, srv, request{body: body})
	rb := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, rb)
	id := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session: id, version: version})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	readBody(t, resp)
	return id
}

// event is one SSE event as a test sees it.
type event struct {
	id, data string
	retry    string
}

// sseEvents reads events from r until it ends or n events arrived (n < 0:
// until it ends), failing after 5s.
func sseEvents(t *testing.T, r io.Reader, n int) []event {
	t.Helper()
	ch := make(chan []event, 1)
	go func() {
		var evs []event
		var cur event
		started := false
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if started {
					evs = append(evs, cur)
					cur, started = event{}, false
					if n >= 0 && len(evs) == n {
						ch <- evs
						return
					}
				}
			case strings.HasPrefix(line, "id: "):
				cur.id, started = line[4:], true
			case strings.HasPrefix(line, "retry: "):
				cur.retry, started = line[7:], true
			case strings.HasPrefix(line, "data: "):
				cur.data, started = cur.data+line[6:], true
			case strings.HasPrefix(line, "data:"):
				started = true
			}
		}
		ch <- evs
	}()
	select {
	case evs := <-ch:
		return evs
	case <-time.After(5 * time.Second):
		t.Fatal("timed out reading SSE events")
		return nil
	}
}
