package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// Adversarial probes of what one peer can make the everything server hold
// in bytes, write to its log, or tell another client: subscriptions and
// listen filters, oversized batches, numbers the schema validator cannot
// afford, newline-filled client names, and error text holding secrets. As
// in probes_test.go, each runs against the server as `everything -http`
// runs it with its defaults, over real HTTP on 127.0.0.1, bounded in
// requests and time (a smaller variant with -short).

// heapInUse returns the bytes of live heap after a collection: what the
// process holds.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rawPost sends body as one POST of a 2025 session (sid, at revision v;
// none for an initialize) and returns the response's status, the first
// JSON-RPC message of its body, the session id it names, and how long the
// answer took. The answer must come within limit.
func rawPost(t *testing.T, url, sid, v, body string, limit time.Duration) (status int, msg, newSID string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", v)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "answered within %v", limit)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "answered within %v", limit)
	took = time.Since(start)
	msg = string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = ""
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "" {
				msg = d
				break
			}
		}
	}
	return resp.StatusCode, msg, resp.Header.Get("Mcp-Session-Id"), took
}

// rawSession initializes a 2025 session at revision v over raw POSTs and
// returns its id.
func rawSession(t *testing.T, url, v, clientName string) string {
	t.Helper()
	name, err := json.Marshal(clientName)
	require.NoError(t, err)
	status, _, sid, _ := rawPost(t, url, "", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+v+
		`","capabilities":{},"clientInfo":{"name":`+string(name)+`,"version":"1"}}}`, 10*time.Second)
	require.Equal(t, http.StatusOK, status)
	require.NotEmpty(t, sid)
	status, _, _, _ = rawPost(t, url, sid, v, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 10*time.Second)
	require.Equal(t, http.StatusAccepted, status)
	return sid
}

// errorOf decodes a JSON-RPC error answer: its code, message and the
// limit its data names.
func errorOf(t *testing.T, msg string) (code int64, message, limit string) {
	t.Helper()
	var m struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Limit   string         `json:"limit"`
				Details map[string]any `json:"details"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(msg), &m), head(msg))
	require.NotNil(t, m.Error, "want an error, got %s", head(msg))
	limit = m.Error.Data.Limit
	if l, ok := m.Error.Data.Details["limit"].(string); ok {
		limit = l
	}
	return m.Error.Code, m.Error.Message, limit
}

// One session subscribes to URIs of 2 MiB (the old attack: 48 of them
// pinned 150 MiB), then to as many 8 KiB URIs as it is allowed. A URI
// over MaxURIBytes is refused without being kept or echoed; the
// subscriptions stop at MaxSubscriptionBytes, so the session holds at
// most its budget (128 KiB), and another client is still served.
func TestProbeSubscribedURIsBounded(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	c := p.session(t, "subscriber", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	huge := 8
	if !testing.Short() {
		huge = 48
	}
	before := heapInUse()
	start := time.Now()
	for i := range huge {
		err := c.Subscribe(ctx, "test://static/resource/"+strconv.Itoa(i)+"/"+strings.Repeat("u", 2<<20))
		var e *mcp.Error
		require.ErrorAs(t, err, &e, "URI %d", i)
		assert.Equal(t, int64(mcp.CodeInvalidParams), e.Code)
		assert.Contains(t, e.Message, "MaxURIBytes")
		assert.Less(t, len(e.Message), 200, "the URI is not echoed")
	}
	t.Logf("%d subscriptions to 2 MiB URIs refused in %v", huge, time.Since(start).Round(time.Millisecond))
	held := 0
	for i := range 1000 {
		err := c.Subscribe(ctx, "test://static/resource/"+strconv.Itoa(i)+"/"+strings.Repeat("s", 8<<10-40))
		if err != nil {
			var e *mcp.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, int64(mcp.CodeServerBusy), e.Code)
			assert.Contains(t, e.Message, "MaxSubscriptionBytes")
			break
		}
		held++
	}
	grown := int64(heapInUse()) - int64(before)
	t.Logf("8 KiB subscriptions held: %d; heap grown by %d KiB", held, grown>>10)
	assert.Less(t, held, 20, "the byte budget stops them (128 KiB)")
	assert.Less(t, grown, int64(4<<20), "the session holds its budget, not the URIs it sent")
	served(t, p)
}

// One 2026-07-28 listen whose filter fills most of a 4 MiB body with
// 4,000 URIs of 850 bytes (the old attack held 7.5 MiB for the life of the
// listen, and the acknowledgement echoed all 3.4 MB) is refused at once
// with -32602 naming MaxSubscriptionBytes, in a short answer; a filter of
// more than 4,096 entries is refused naming maxSubscriptions. Nothing
// stays held, and another client is still served.
func TestProbeHugeListenFilterRefused(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	filterOf := func(n, size int) string {
		uris := make([]string, n)
		for i := range uris {
			uris[i] = "test://static/resource/" + strconv.Itoa(i) + "/"
			uris[i] += strings.Repeat("f", size-len(uris[i]))
		}
		b, err := json.Marshal(map[string]any{"resourceSubscriptions": uris})
		require.NoError(t, err)
		return string(b)
	}
	n := 4000
	if testing.Short() {
		n = 1000
	}
	before := heapInUse()
	for _, tc := range []struct {
		name, filter, limit string
	}{
		{"long URIs", filterOf(n, 850), "MaxSubscriptionBytes"},
		{"many URIs", filterOf(5000, 30), "maxSubscriptions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			m, err := modernPost(ctx, hc, p.url, "listener", "subscriptions/listen", "", `"notifications":`+tc.filter)
			require.NoError(t, err)
			took := time.Since(start)
			b, err := json.Marshal(m)
			require.NoError(t, err)
			code, msg, limit := errorOf(t, string(b))
			t.Logf("a listen with a %d KiB filter: answered in %v with %d bytes (%s)", len(tc.filter)>>10, took.Round(time.Millisecond), len(b), limit)
			assert.Equal(t, int64(mcp.CodeInvalidParams), code)
			assert.Equal(t, tc.limit, limit)
			assert.Contains(t, msg, tc.limit)
			assert.Less(t, len(b), 1024, "the filter is not echoed")
		})
	}
	grown := int64(heapInUse()) - int64(before)
	t.Logf("heap grown by %d KiB", grown>>10)
	assert.Less(t, grown, int64(4<<20), "nothing of the filters stays held")
	served(t, p)
}

// A 2025-03-26 batch of 65 pings (MaxBatch is 64) over HTTP is answered
// at once with -32600 naming MaxBatch; before, the answer went out with
// id null, the transport dropped it and the POST hung until the client
// gave up, and the batch's ids stayed in use. The same ids are served
// right after.
func TestProbeOversizedBatchAnsweredPromptly(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	sid := rawSession(t, p.url, mcp.Version20250326, "batcher")
	var b strings.Builder
	b.WriteString("[")
	for i := range 65 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
	}
	b.WriteString("]")
	status, msg, _, took := rawPost(t, p.url, sid, mcp.Version20250326, b.String(), 5*time.Second)
	t.Logf("a batch of 65: HTTP %d in %v", status, took.Round(time.Microsecond))
	code, message, limit := errorOf(t, msg)
	assert.Equal(t, int64(-32600), code)
	assert.Contains(t, message, "MaxBatch")
	assert.Equal(t, "MaxBatch", limit)
	assert.Less(t, took, 2*time.Second)
	_, msg, _, _ = rawPost(t, p.url, sid, mcp.Version20250326, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":65,"method":"ping"}]`, 5*time.Second)
	assert.Contains(t, msg, `"id":65,"result"`, "the batch's ids are free")
	served(t, p)
}

// Tool arguments with a number of exponent 999999999 (the schema
// validator panicked on it, answered INTERNAL retryable, and logged a
// 5.6 KB stack each time) or of a million digits (about 3 CPU-seconds
// each) are refused with INVALID_ARGUMENT, not retryable, at once, and
// log no stack.
func TestProbeHugeNumbersRefusedQuickly(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	c := p.session(t, "numbers", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	calls := 5
	if !testing.Short() {
		calls = 20
	}
	for _, tc := range []struct{ name, number, limit string }{
		{"exponent", "1e999999999", "maxNumberExponent"},
		{"digits", "1" + strings.Repeat("0", 1_000_000), "maxNumberDigits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(p.logs.String())
			start := time.Now()
			for range calls {
				_, err := c.CallTool(ctx, "slow_compute", jsontext.Value(`{"seconds":`+tc.number+`}`))
				var se *mcp.StructuredError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, mcp.ErrInvalidArgument, se.Code)
				assert.False(t, se.Retryable)
				assert.Contains(t, se.Message, tc.limit)
			}
			took := time.Since(start)
			logged := p.logs.String()[before:]
			t.Logf("%d calls with %s: %v, %d bytes of log", calls, tc.name, took.Round(time.Millisecond), len(logged))
			assert.Less(t, took, time.Duration(calls)*500*time.Millisecond, "linear in the input")
			assert.NotContains(t, logged, "goroutine ", "no stack")
			assert.Less(t, len(logged), calls*2<<10)
		})
	}
	served(t, p)
}

// A 2025 initialize whose client name is newlines (4 MB of them, as JSON
// escapes; a 13 MB INFO line before) writes a short log line: peer values
// are cut to 64 bytes. Ten of them stay within a few KB.
func TestProbeNewlineClientNameLogsLittle(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	n := 1 << 20
	if !testing.Short() {
		n = 2<<20 - 4096 // with its escapes, the name fills the 4 MiB body
	}
	name := strings.Repeat("\n", n)
	before := len(p.logs.String())
	rawSession(t, p.url, mcp.Version20251125, name)
	logged := p.logs.String()[before:]
	t.Logf("one initialize with a name of %d newlines: %d bytes of log", n, len(logged))
	assert.Less(t, len(logged), 4<<10, "from:\n%s", head(logged))
	assert.Contains(t, logged, strconv.Itoa(n)+" bytes", "the length of the name is logged")
	before = len(p.logs.String())
	for range 10 {
		rawSession(t, p.url, mcp.Version20251125, name)
	}
	logged = p.logs.String()[before:]
	t.Logf("ten more: %d bytes of log", len(logged))
	assert.Less(t, len(logged), 20<<10)
}

// A tool's plain Go error holding a database DSN with its password and a
// file path reaches the client as INTERNAL "internal error" with the
// call's correlation id (retryable), and the text only the log.
func TestProbePlainErrorTextMasked(t *testing.T) {
	const secret = "postgres://app:hunter2@db.internal:5432/prod?sslrootcert=/etc/keel/secret/ca.pem"
	p := startProbeServerWith(t, func(reg *registry.Registry) {
		registry.MustRegister(reg, "leaky_query", "Fails with a plain error holding a DSN", func(context.Context, NoArgs) (*mcp.CallToolResult, error) {
			return nil, errors.New("query failed: dial " + secret + ": connection refused")
		}, nil)
	})
	c := p.session(t, "victim", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.CallTool(ctx, "leaky_query", nil)
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	t.Logf("the client is told: %s", se.Message)
	assert.Equal(t, mcp.ErrInternal, se.Code)
	assert.True(t, se.Retryable)
	assert.NotEmpty(t, se.CorrelationID)
	assert.NotContains(t, se.Message, "hunter2")
	assert.NotContains(t, se.Message, "/etc/keel")
	logs := p.logs.String()
	assert.Contains(t, logs, se.CorrelationID, "the log line carries the correlation id")
	assert.Contains(t, logs, "connection refused", "the text goes to the log")
}

// startProbeServerWith starts a probe server as startProbeServer does,
// with the tools add registers beside the fixtures.
func startProbeServerWith(t *testing.T, add func(*registry.Registry)) *probeServer {
	t.Helper()
	logs := &exampletest.SafeBuffer{}
	cfg := defaults()
	logger := cfg.Logger(logs)
	reg := newRegistry(logger)
	add(reg)
	srv, err := configuredServer(cfg, reg, logger)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, srv, ln, &streamhttp.Options{}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("serveHTTP did not return")
		}
	})
	return &probeServer{url: "http://" + ln.Addr().String() + "/mcp", addr: ln.Addr().String(), srv: srv, logs: logs}
}

// memInUse returns the bytes of live heap and goroutine stacks after a
// collection.
func memInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// rss returns the process's resident set in bytes (Linux), or 0.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// The figures of the README's limits table: what an idle initialized
// 2025 session over HTTP holds (heap and stacks of the whole process,
// divided by the sessions opened), and what a subscriptions/listen with a
// filter at MaxSubscriptionBytes holds while it is open.
func TestProbeMemoryPerSessionAndListen(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	sessions := 100
	if !testing.Short() {
		sessions = 400
	}
	rawSession(t, p.url, mcp.Version20251125, "warm-up")
	before, beforeRSS := memInUse(), rss()
	opened := 0
	for i := range sessions {
		status, _, sid, _ := rawPost(t, p.url, "", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
			`"capabilities":{},"clientInfo":{"name":"idle-`+strconv.Itoa(i)+`","version":"1"}}}`, 10*time.Second)
		if status != http.StatusOK {
			break // a per-peer bound on sessions: measure what was opened
		}
		status, _, _, _ = rawPost(t, p.url, sid, mcp.Version20251125, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 10*time.Second)
		require.Equal(t, http.StatusAccepted, status)
		opened++
	}
	require.GreaterOrEqual(t, opened, 20)
	perSession := (memInUse() - before) / int64(opened)
	t.Logf("an idle initialized 2025 session over HTTP: %.1f KiB of heap and stacks, %.1f KiB of RSS (%d sessions)",
		float64(perSession)/1024, float64(rss()-beforeRSS)/float64(opened)/1024, opened)
	assert.Less(t, perSession, int64(64<<10))

	// A maximal filter: URIs of 24 bytes up to MaxSubscriptionBytes.
	per := 24 + 64
	uris := make([]string, (128<<10)/per)
	for i := range uris {
		uris[i] = fmt.Sprintf("test://static/r/%08d", i)
	}
	filter, err := json.Marshal(map[string]any{"resourceSubscriptions": uris})
	require.NoError(t, err)
	const listens = 8
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"listener","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":` + string(filter) + `,` + meta + `}}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	before = memInUse()
	acks := 0
	for range listens {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 1<<20)
		for {
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, "notifications/subscriptions/acknowledged") {
				acks = max(acks, len(line))
				break
			}
		}
	}
	perListen := (memInUse() - before) / listens
	t.Logf("a listen with a filter of %d URIs (%d KiB of JSON, at MaxSubscriptionBytes): %.1f KiB held; acknowledgement %d KiB",
		len(uris), len(filter)>>10, float64(perListen)/1024, acks>>10)
	assert.Less(t, perListen, int64(1<<20))
}
