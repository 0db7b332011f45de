package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// Adversarial probes: peers that try to make the everything server, as
// `everything -http` runs it with no configuration, hold more than its
// bounds allow, over real streamable HTTP on 127.0.0.1. Each probe is
// bounded in requests and time.

// probeServer is a running everything server.
type probeServer struct {
	url  string // http://127.0.0.1:port/mcp
	addr string // 127.0.0.1:port
	srv  *mcp.Server
	logs *exampletest.SafeBuffer // what the server logged, as main logs it (JSON lines)
}

// startProbeServer starts the everything server as main does with -http
// and no configuration file or variable: the default configuration, its
// logger, the fixture registry, serveHTTP. opts are the handler options;
// main passes an empty Options (the defaults), as the probes do unless
// they say otherwise. The server stops when the test ends.
func startProbeServer(t *testing.T, opts *streamhttp.Options) *probeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return startProbeServerOn(t, ln, opts)
}

// startProbeServerOn is startProbeServer on the listener ln.
func startProbeServerOn(t *testing.T, ln net.Listener, opts *streamhttp.Options) *probeServer {
	t.Helper()
	logs := &exampletest.SafeBuffer{}
	cfg := defaults()
	logger := cfg.Logger(logs)
	srv, err := configuredServer(cfg, newRegistry(logger), logger)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, srv, ln, opts) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		assert.NoError(t, srv.StopTasks(sctx), "task handlers end when asked")
		cancel()
		select {
		case err := <-served:
			assert.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("serveHTTP did not return")
		}
	})
	return &probeServer{url: "http://" + ln.Addr().String() + "/mcp", addr: ln.Addr().String(), srv: srv, logs: logs}
}

// session connects a 2025-11-25 client (a session of its own, no GET
// stream) through hc (nil: a fresh http.Client); the client is closed when
// the test ends.
func (p *probeServer) session(t *testing.T, name string, hc *http.Client) *mcp.Client {
	t.Helper()
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{}}
	}
	c := mcp.NewClient(&mcp.ClientOptions{Name: name, Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, streamhttp.NewClientTransport(p.url,
		&streamhttp.ClientOptions{Logger: quiet, HTTPClient: hc, DisableGETStream: true})))
	t.Cleanup(func() { c.Close() })
	return c
}

// exhausted reports whether err is a RESOURCE_EXHAUSTED tool error.
func exhausted(err error) bool {
	var se *mcp.StructuredError
	return errors.As(err, &se) && se.Code == mcp.ErrResourceExhausted
}

// pause waits for d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// A greedy session keeps 12 slow calls in flight (slow_compute, which
// sleeps until its time is up or the call is cancelled), retrying each
// refused one; a polite session beside it still gets its quick calls
// answered. The protection is the per-client fair share of the
// concurrency slots (half of resources.maxConcurrentExecutions): without
// it the greedy session holds every slot and the polite one, from another
// address, is refused.
func TestProbeGreedySessionBesidePoliteOne(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	greedy := p.session(t, "greedy", nil)
	polite := p.session(t, "polite", clientFrom("127.0.0.2"))

	ctx, stop := context.WithCancel(context.Background())
	var refused, failed atomic.Int64
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, err := greedy.CallTool(ctx, "slow_compute", map[string]any{"seconds": 5})
				switch {
				case exhausted(err):
					refused.Add(1)
				case err != nil && ctx.Err() == nil:
					failed.Add(1)
				}
				pause(ctx, 50*time.Millisecond) // retry: keep 12 in flight
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	require.Eventually(t, func() bool { return refused.Load() > 0 }, 10*time.Second, 10*time.Millisecond,
		"the greedy session fills what it may hold and is refused beyond it")

	const calls = 20
	answered := 0
	for range calls {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := polite.CallTool(cctx, "test_simple_text", nil)
		cancel()
		if err == nil && len(res.Content) == 1 {
			answered++
			continue
		}
		if !exhausted(err) {
			require.NoError(t, err)
		}
	}
	assert.GreaterOrEqual(t, answered, calls*9/10, "the polite session is served beside the greedy one")
	assert.Zero(t, failed.Load(), "the greedy calls are refused or run, nothing else")
	t.Logf("polite: %d of %d answered; greedy: %d calls refused", answered, calls, refused.Load())
}

// modernPost sends one 2026-07-28 request as its own POST through hc, from
// a client named client that declares the tasks extension, and returns
// the JSON-RPC response (of a JSON or an SSE answer).
func modernPost(ctx context.Context, hc *http.Client, url, client, method, name, params string) (map[string]any, error) {
	return modernPostCaps(ctx, hc, url, client, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, method, name, params)
}

// modernPostCaps is modernPost from a client declaring the capabilities
// caps (a JSON object).
func modernPostCaps(ctx context.Context, hc *http.Client, url, client, caps, method, name, params string) (map[string]any, error) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"` + client + `","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,%s}}`, method, params, meta)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", name)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var msg []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && bytes.Contains(d, []byte(`"id":1`)) {
				msg = append([]byte(nil), d...)
			}
		}
	} else if msg, err = io.ReadAll(resp.Body); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("HTTP %d, %q: %w", resp.StatusCode, msg, err)
	}
	return m, nil
}

// served checks that clients other than the one that left are answered:
// a 2025-11-25 session and a 2026-07-28 client with its own name each get
// 10 quick calls answered.
func served(t *testing.T, p *probeServer) {
	t.Helper()
	other := p.session(t, "other", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 10 {
		_, err := other.CallTool(ctx, "test_simple_text", nil)
		require.NoError(t, err, "session call %d", i)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	for i := range 10 {
		m, err := modernPost(ctx, hc, p.url, "other-modern", "tools/call", "test_simple_text", `"name":"test_simple_text","arguments":{}`)
		require.NoError(t, err)
		res, ok := m["result"].(map[string]any)
		require.True(t, ok, "modern call %d: want a result, got %v", i, m)
		require.NotEqual(t, true, res["isError"], "modern call %d: %v", i, res)
	}
}

// A client starts 12 long task-backed calls (slow_compute for 10 minutes,
// as tasks), then disconnects without cancelling them: other clients are
// still served while the tasks run. Without the per-client fair share of
// the slots, or with tasks holding request slots beyond it, the
// abandoned tasks would hold every slot.
func TestProbeAbandonedTasksLeaveRoomForOthers(t *testing.T) {
	const long = `{"seconds":600}`
	t.Run("2025-11-25 session dropped", func(t *testing.T) {
		p := startProbeServer(t, &streamhttp.Options{})
		tr := &http.Transport{}
		greedy := p.session(t, "greedy", &http.Client{Transport: tr})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		started := 0
		for range 12 {
			if _, err := greedy.CallToolAsTask(ctx, "slow_compute", jsontext.Value(long), 0); err == nil {
				started++
			} else {
				require.True(t, exhausted(err), "a task beyond the bounds is refused: %v", err)
			}
		}
		require.Positive(t, started)
		tr.CloseIdleConnections() // the client goes away without DELETE: its session and tasks live on
		served(t, p)
		t.Logf("tasks started by the dropped session: %d of 12", started)
	})
	t.Run("2025-11-25 sessions dropped one after another", func(t *testing.T) {
		// Two sessions start tasks and go away: tasks run in their own
		// pool, outside the request slots, so the other client is served.
		p := startProbeServer(t, &streamhttp.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		started := 0
		for range 2 { // each new session is a new client for the fair share
			tr := &http.Transport{}
			greedy := p.session(t, "greedy", &http.Client{Transport: tr})
			for range 12 {
				if _, err := greedy.CallToolAsTask(ctx, "slow_compute", jsontext.Value(long), 0); err == nil {
					started++
				}
			}
			tr.CloseIdleConnections()
		}
		served(t, p)
		t.Logf("tasks started by the dropped sessions: %d of 24", started)
	})
	t.Run("2026-07-28 tasks abandoned", func(t *testing.T) {
		p := startProbeServer(t, &streamhttp.Options{})
		hc := &http.Client{Transport: &http.Transport{}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var mu sync.Mutex
		var tasks, refusedN int
		var errs []error
		var wg sync.WaitGroup
		for range 12 {
			wg.Go(func() {
				m, err := modernPost(ctx, hc, p.url, "greedy", "tools/call", "slow_compute", `"name":"slow_compute","arguments":`+long)
				mu.Lock()
				defer mu.Unlock()
				res, _ := m["result"].(map[string]any)
				rerr, _ := m["error"].(map[string]any)
				data, _ := rerr["data"].(map[string]any)
				switch {
				case err != nil:
					errs = append(errs, err)
				case res != nil && res["resultType"] == "task":
					tasks++
				case res != nil && res["isError"] == true, data["code"] == string(mcp.ErrResourceExhausted):
					refusedN++ // beyond the client's share of the slots
				default:
					errs = append(errs, fmt.Errorf("unexpected answer %v", m))
				}
			})
		}
		wg.Wait()
		require.Empty(t, errs)
		require.Positive(t, tasks)
		hc.CloseIdleConnections() // the client goes away; its tasks run on
		served(t, p)
		t.Logf("tasks started: %d of 12, refused: %d", tasks, refusedN)
	})
}

// trickle sends a POST whose body comes at one byte a second. It returns
// how long the server took to answer (at most limit) and what it
// answered, and whether it then closed the connection within grace.
func trickle(t *testing.T, addr string, limit, grace time.Duration) (elapsed time.Duration, answer string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 4096\r\n\r\n", addr)
	require.NoError(t, err)
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if _, err := conn.Write([]byte(" ")); err != nil {
				return // the server closed the connection
			}
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	})
	require.NoError(t, conn.SetReadDeadline(start.Add(limit)))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "no answer within %s", limit)
	elapsed = time.Since(start)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	answer = resp.Status + " " + string(body)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(grace)))
	_, err = br.ReadByte()
	closed = errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
	return elapsed, answer, closed
}

// A body trickled at one byte a second is cut off after BodyReadTimeout:
// the server answers 408 and closes the connection, instead of holding a
// goroutine and a stream slot for as long as the client likes. The real
// default takes 30 s, so that variant runs in parallel and not with
// -short; the short variant (a 1 s timeout) always runs. Without the
// timeout (BodyReadTimeout negative) the 4096-byte body would hold the
// connection for over an hour.
func TestProbeTrickledBodyIsCutOff(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, opts *streamhttp.Options, timeout time.Duration) {
		p := startProbeServer(t, opts)
		elapsed, answer, closed := trickle(t, p.addr, timeout+30*time.Second, 3*time.Second)
		assert.True(t, strings.HasPrefix(answer, "408 "), "answer: %q", answer)
		assert.GreaterOrEqual(t, elapsed, timeout-time.Second)
		assert.Less(t, elapsed, timeout+10*time.Second)
		t.Logf("answered 408 after %s", elapsed.Round(time.Millisecond))
		assert.True(t, closed, "the connection is closed after the 408, not held while the body trickles on")
	}
	t.Run("1s timeout", func(t *testing.T) {
		t.Parallel()
		check(t, &streamhttp.Options{BodyReadTimeout: time.Second}, time.Second)
	})
	t.Run("default timeout", func(t *testing.T) {
		if testing.Short() {
			t.Skip("takes DefaultBodyReadTimeout (30 s)")
		}
		t.Parallel()
		require.LessOrEqual(t, streamhttp.DefaultBodyReadTimeout, 30*time.Second)
		check(t, &streamhttp.Options{}, streamhttp.DefaultBodyReadTimeout) // as main: the default
	})
}

// A request with a 40 KB Host header that is not allowed (DNS rebinding
// protection) is refused with 403 and costs at most 2 KB of log: the
// logged value is cut to 64 bytes and its length given. A burst of such
// requests costs a few lines only (refusal lines are rate-limited).
// Without the cut every refusal would log the whole 40 KB. (Headers over
// 64 KiB never reach the handler: the HTTP server answers 431.)
func TestProbeHugeForeignHostLogsLittle(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	host := strings.Repeat("a", 40<<10) + ".example"
	refuse := func() {
		conn, err := net.Dial("tcp", p.addr)
		require.NoError(t, err)
		defer conn.Close()
		body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", host, len(body), body)
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	}

	before := len(p.logs.String())
	refuse()
	logged := p.logs.String()[before:]
	assert.LessOrEqual(t, len(logged), 2<<10, "log of one refusal, from:\n%s", head(logged))
	t.Logf("one refusal: %d bytes of log", len(logged))
	assert.True(t, strings.Contains(logged, "40968"), "the length of the value is logged:\n%s", head(logged))
	assert.False(t, strings.Contains(logged, strings.Repeat("a", 65)), "the value is cut to 64 bytes")

	before = len(p.logs.String())
	for range 20 {
		refuse()
	}
	logged = p.logs.String()[before:]
	assert.LessOrEqual(t, len(logged), 4<<10, "log of 20 refusals, from:\n%s", head(logged))
	t.Logf("20 refusals: %d bytes of log", len(logged))
}

// head returns the first 2 KB of s.
func head(s string) string { return s[:min(len(s), 2<<10)] }
