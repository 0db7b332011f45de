package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// Adversarial probes of who a peer is: the server tells peers apart by
// their address (127.0.0.2, 127.0.0.3, ... on loopback), never by what they
// say about themselves, and every quota is per peer as well as global. An
// attacker works from 127.0.0.2, a polite client from 127.0.0.3.

const (
	attacker = "127.0.0.2"
	polite   = "127.0.0.3"
)

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// isErrorResult reports whether m is an isError tool result.
func isErrorResult(m map[string]any) bool {
	res, _ := m["result"].(map[string]any)
	return res != nil && res["isError"] == true
}

// okResult reports whether m is a result that is not an error.
func okResult(m map[string]any) bool {
	res, _ := m["result"].(map[string]any)
	return res != nil && res["isError"] != true
}

// One anonymous 2026-07-28 peer calls under two client names, keeping 12
// slow calls in flight; a polite anonymous client and a polite 2025
// session at another address each make 20 quick calls. The peer's share
// of the request slots is keyed by its address, so a second name gains it
// nothing and the polite clients are served. (When the share was keyed by
// the self-reported name, two names took all 10 slots.)
func TestProbeTwoNamesOneAddress(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	greedy := clientFrom(attacker)
	defer greedy.CloseIdleConnections()
	ctx, stop := context.WithCancel(context.Background())
	var refused, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		name := []string{"greedy-a", "greedy-b"}[i%2]
		wg.Go(func() {
			for ctx.Err() == nil {
				m, err := modernPostCaps(ctx, greedy, p.url, name, `{}`, "tools/call", "slow_compute",
					`"name":"slow_compute","arguments":{"seconds":5}`)
				switch {
				case isErrorResult(m):
					refused.Add(1)
				case err != nil && ctx.Err() == nil:
					failed.Add(1)
				}
				pause(ctx, 50*time.Millisecond)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	require.Eventually(t, func() bool { return refused.Load() > 0 }, 10*time.Second, 10*time.Millisecond,
		"the greedy peer fills what it may hold and is refused beyond it")

	const calls = 20
	hc := clientFrom(polite)
	defer hc.CloseIdleConnections()
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	modern := 0
	for range calls {
		m, err := modernPostCaps(cctx, hc, p.url, "greedy-a", `{}`, "tools/call", "test_simple_text", `"name":"test_simple_text","arguments":{}`)
		if err == nil && okResult(m) {
			modern++
		}
	}
	session := p.session(t, "polite", clientFrom(polite))
	legacy := 0
	for range calls {
		if _, err := session.CallTool(cctx, "test_simple_text", nil); err == nil {
			legacy++
		}
	}
	t.Logf("polite 2026-07-28 client: %d of %d answered; polite 2025 session: %d of %d; greedy calls refused: %d",
		modern, calls, legacy, calls, refused.Load())
	assert.GreaterOrEqual(t, modern, calls*9/10, "a polite client at another address is served, even under a greedy client's name")
	assert.GreaterOrEqual(t, legacy, calls*9/10, "a polite session at another address is served")
	assert.Zero(t, failed.Load(), "the greedy calls are refused or run, nothing else")
}

// openListen opens a 2026-07-28 subscriptions/listen stream through hc from
// a client named client. It returns the open response when the
// subscription was acknowledged (close it to end the stream), else what
// the server answered.
func openListen(ctx context.Context, hc *http.Client, url, client string) (io.Closer, string, error) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"` + client + `","version":"1.0.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}`
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Sprintf("HTTP %d %s", resp.StatusCode, b), nil
	}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			resp.Body.Close()
			return nil, "", err
		}
		d, ok := bytes.CutPrefix(line, []byte("data: "))
		switch {
		case !ok:
		case bytes.Contains(d, []byte("notifications/subscriptions/acknowledged")):
			return resp.Body, "", nil
		default:
			resp.Body.Close()
			return nil, string(d), nil
		}
	}
}

// One anonymous peer opens subscriptions/listen streams, each under a
// client name of its own, 40 at most: it gets the per-peer share
// (MaxListensPerClient, 16), the next is refused naming that limit, and a
// client at another address still opens one. (When anonymous callers
// counted only in the total, one peer could open all 1,000.)
func TestProbeAnonymousListenSlots(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	hc := clientFrom(attacker)
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var open []io.Closer
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	refusal := ""
	for i := range 40 {
		c, answer, err := openListen(ctx, hc, p.url, fmt.Sprintf("listener-%d", i))
		require.NoError(t, err)
		if c == nil {
			refusal = answer
			break
		}
		open = append(open, c)
	}
	t.Logf("listen streams one anonymous peer opened: %d of 40 tried; refusal: %.200s", len(open), refusal)
	assert.Equal(t, 16, len(open), "one peer holds its share of the listen streams, whatever names it gives")
	assert.Contains(t, refusal, "MaxListensPerClient", "the refusal names the limit")
	assert.Contains(t, refusal, `"retryable":true`)

	other := clientFrom(polite)
	defer other.CloseIdleConnections()
	c, answer, err := openListen(ctx, other, p.url, "listener-0")
	require.NoError(t, err)
	require.NotNil(t, c, "a client at another address still opens a stream: %s", answer)
	c.Close()
}

// taskID returns the id of the task a 2026-07-28 tools/call became.
func taskID(t *testing.T, m map[string]any) string {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	require.Equal(t, "task", res["resultType"], "want a task: %v", m)
	id, _ := res["taskId"].(string)
	require.NotEmpty(t, id)
	return id
}

// Anonymous 2026-07-28 tasks belong to their peer. A client at one
// address starts a task; a client at another address, under the same
// client name, can neither read nor cancel it by its id, and cannot evict
// its result by finishing more than MaxFinishedTasks (100) tasks of its
// own. (When anonymous callers shared one task owner, all three worked.)
func TestProbeAnonymousTasksIsolated(t *testing.T) {
	p := startProbeServer(t, &streamhttp.Options{})
	owner, other := clientFrom(attacker), clientFrom(polite)
	defer owner.CloseIdleConnections()
	defer other.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	job := func(hc *http.Client) string {
		m, err := modernPost(ctx, hc, p.url, "same-name", "tools/call", "protocol_error_job", `"name":"protocol_error_job","arguments":{}`)
		require.NoError(t, err)
		return taskID(t, m)
	}
	get := func(hc *http.Client, id string) map[string]any {
		m, err := modernPost(ctx, hc, p.url, "same-name", "tasks/get", id, `"taskId":"`+id+`"`)
		require.NoError(t, err)
		return m
	}
	id := job(owner)
	require.NotNil(t, get(owner, id)["result"], "the owner reads its task")

	read := get(other, id)
	m, err := modernPost(ctx, other, p.url, "same-name", "tasks/cancel", id, `"taskId":"`+id+`"`)
	require.NoError(t, err)
	const flood = 110
	for range flood {
		job(other)
	}
	after := get(owner, id)
	t.Logf("another peer's tasks/get: %.120v; its tasks/cancel: %.120v; the owner's tasks/get after %d tasks of the other peer: %.120v",
		read, m, flood, after)
	assert.Nil(t, read["result"], "another peer cannot read the task")
	assert.NotNil(t, read["error"])
	assert.Nil(t, m["result"], "another peer cannot cancel the task")
	assert.NotNil(t, after["result"], "another peer's finished tasks do not evict the owner's")
}

// initializeRaw opens a 2025-11-25 session through hc with one initialize
// POST and its notifications/initialized; it returns the session id, or
// the refusal (status and body).
func initializeRaw(ctx context.Context, hc *http.Client, url string) (id string, status int, refusal string, err error) {
	post := func(body, session string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		return hc.Do(req)
	}
	resp, err := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"many","version":"1"}}}`, "")
	if err != nil {
		return "", 0, "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		return "", resp.StatusCode, resp.Header.Get("Retry-After") + " " + string(b), nil
	}
	resp, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
	if err != nil {
		return "", 0, "", err
	}
	resp.Body.Close()
	return id, http.StatusOK, "", nil
}

// One peer opens initialized 2025 sessions, one after another, and keeps
// them: it gets MaxSessionsPerPeer of them, the next initialize gets 429
// naming that limit, and a client at another address still gets a
// session. The short variant sets the bound to 20 and tries 30; the full
// one runs the default (1,000) and tries 1,050, and measures what an idle
// initialized session holds. (With MaxSessions alone, one peer's 10,000
// sessions locked every new client out.)
func TestProbeManySessionsOnePeer(t *testing.T) {
	limit, tries := streamhttp.DefaultMaxSessionsPerPeer, streamhttp.DefaultMaxSessionsPerPeer+50
	opts := &streamhttp.Options{}
	if testing.Short() {
		limit, tries = 20, 30
		opts.MaxSessionsPerPeer = limit
	}
	p := startProbeServer(t, opts)
	hc := clientFrom(attacker)
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := uint64(memInUse())
	created, status, refusal := 0, 0, ""
	for range tries {
		id, st, r, err := initializeRaw(ctx, hc, p.url)
		require.NoError(t, err)
		if id == "" {
			status, refusal = st, r
			break
		}
		created++
	}
	perSession := float64(uint64(memInUse())-min(before, uint64(memInUse()))) / float64(max(created, 1)) / 1024
	t.Logf("sessions one peer opened: %d of %d tried (about %.1f KiB of heap and stacks each, client side included); refusal: HTTP %d, Retry-After %.200s",
		created, tries, perSession, status, refusal)
	assert.Equal(t, limit, created, "one peer gets its share of the sessions")
	assert.Equal(t, http.StatusTooManyRequests, status)
	assert.Contains(t, refusal, "MaxSessionsPerPeer", "the refusal names the limit")
	assert.True(t, strings.HasPrefix(refusal, "1 "), "with Retry-After")

	id, st, r, err := initializeRaw(ctx, clientFrom(polite), p.url)
	require.NoError(t, err)
	assert.NotEmpty(t, id, "a client at another address still gets a session: HTTP %d %s", st, r)
}

// holdConns opens n connections from ip to addr, each sending one request
// and reading its answer, then staying open and idle as a keep-alive
// connection would; it returns how many were answered (the rest were
// closed by the server), and closes them all when the test ends.
func holdConns(t *testing.T, ip, addr string, n int) (answered int) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, "GET /idle HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			resp.Body.Close()
			_ = c.SetDeadline(time.Time{})
			mu.Lock()
			answered++
			mu.Unlock()
		})
	}
	wg.Wait()
	return answered
}

// One peer opens idle keep-alive connections: it keeps at most its share
// (MaxConnsPerPeer), those beyond are closed at accept with a few log
// lines, and a client at another address is still served. The short
// variant bounds the listener at 50 per peer and 100 in all and opens 300;
// the full one opens 1,100 against the defaults (1,024 per peer, less
// under a low open-file limit). (Without
// a bound every connection stayed open until the process ran out of file
// descriptors.)
func TestProbeConnectionFlood(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	perPeer, n := streamhttp.DefaultMaxConnsPerPeer, streamhttp.DefaultMaxConnsPerPeer+76
	var lln *streamhttp.LimitedListener
	if testing.Short() {
		perPeer, n = 50, 300
		lln = streamhttp.LimitListener(ln, &streamhttp.ListenerOptions{MaxConns: 100, MaxConnsPerPeer: perPeer,
			Logger: slog.New(slog.DiscardHandler)})
		ln = lln
	}
	p := startProbeServerOn(t, ln, &streamhttp.Options{})
	before := len(p.logs.String())
	answered := holdConns(t, attacker, p.addr, n)
	logged := strings.Count(p.logs.String()[before:], "\n")
	t.Logf("idle connections one peer holds open: %d of %d; log lines: %d", answered, n, logged)
	assert.LessOrEqual(t, answered, perPeer, "one peer holds at most its share of the connections")
	assert.Positive(t, answered)
	if lln != nil {
		assert.LessOrEqual(t, lln.PeerConnCount(netip.MustParseAddr(attacker)), perPeer)
	} else {
		assert.Less(t, logged, 20, "refused connections are logged at a bounded rate")
	}

	s := p.session(t, "polite", clientFrom(polite))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.CallTool(ctx, "test_simple_text", nil)
	require.NoError(t, err, "a client at another address is served")
}

// The server main runs with -http bounds its connections: the HTTP
// server's timeouts and header limit, and the listener's connection
// limits, are set with no configuration; a header section over the limit
// gets 431.
func TestProbeDefaultHTTPServerBounds(t *testing.T) {
	hs := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	assert.Equal(t, 10*time.Second, hs.ReadHeaderTimeout)
	assert.Equal(t, 60*time.Second, hs.IdleTimeout)
	assert.Equal(t, 64<<10, hs.MaxHeaderBytes)
	assert.Zero(t, hs.WriteTimeout, "no whole-response deadline: SSE streams last; each write has its own")
	assert.NotNil(t, hs.ErrorLog)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lln := limitConns(ln, slog.New(slog.DiscardHandler), nil)
	defer lln.Close()
	assert.Equal(t, max(1, min(streamhttp.DefaultMaxConnsPerPeer, lln.MaxConns()/10)), lln.MaxConnsPerPeer(),
		"a peer's share of the connections is at most a tenth of them")
	assert.Positive(t, lln.MaxConns())
	assert.LessOrEqual(t, lln.MaxConns(), streamhttp.DefaultMaxConns)

	p := startProbeServer(t, &streamhttp.Options{})
	req, err := http.NewRequest(http.MethodPost, p.url, strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("X-Padding", strings.Repeat("a", 70<<10))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}
