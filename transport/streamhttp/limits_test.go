package streamhttp_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// limitAnswer is the JSON-RPC error of a request refused at a bound.
type limitAnswer struct {
	ID    any `json:"id"`
	Error struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Limit string `json:"limit"`
			Max   int64  `json:"max"`
		} `json:"data"`
	} `json:"error"`
}

func decodeLimit(t *testing.T, body string) limitAnswer {
	t.Helper()
	var a limitAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &a), body)
	return a
}

// Beyond MaxSessions an initialize gets 503 with a JSON-RPC error naming
// the limit; a session that ends makes room again.
func TestHTTPMaxSessions(t *testing.T) {
	srv, h, _ := startHTTP(t, &streamhttp.Options{MaxSessions: 2})
	first := initialize(t, srv, "2025-11-25")
	initialize(t, srv, "2025-11-25")

	resp := do(t, srv, request{body: initBody})
	body := readBody(t, resp)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	a := decodeLimit(t, body)
	assert.Equal(t, float64(1), a.ID, "the initialize request's id is echoed")
	assert.Contains(t, a.Error.Message, "MaxSessions = 2")
	assert.Equal(t, "MaxSessions", a.Error.Data.Limit)
	assert.EqualValues(t, 2, a.Error.Data.Max)
	assert.Equal(t, 2, h.SessionCount())

	resp = do(t, srv, request{method: http.MethodDelete, session: first, version: "2025-11-25"})
	readBody(t, resp)
	initialize(t, srv, "2025-11-25")
}

// A session that no request names after its initialize ends after
// InitTimeout; one whose client sent notifications/initialized lives on.
func TestHTTPInitTimeout(t *testing.T) {
	srv, h, f := startHTTP(t, &streamhttp.Options{InitTimeout: 50 * time.Millisecond})
	kept := initialize(t, srv, "2025-11-25")
	resp := do(t, srv, request{body: initBody})
	readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	abandoned := resp.Header.Get("Mcp-Session-Id")
	require.Equal(t, 2, h.SessionCount())

	require.Eventually(t, func() bool { return h.SessionCount() == 1 }, 2*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { _, ended := f.counts(); return ended == 1 }, 2*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // well past InitTimeout
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: abandoned})
	readBody(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"echo"}`, session: kept})
	readBody(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// MaxStreams counts every POST until its answer and every GET stream, in
// all sessions (and modern and stateless requests alike): one more gets
// 503 naming the limit.
func TestHTTPMaxStreams(t *testing.T) {
	srv, h, f := startHTTP(t, &streamhttp.Options{MaxStreams: 2, ResponseMode: streamhttp.ResponseJSON})
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()

	slow := make(chan *http.Response, 1)
	go func() {
		slow <- do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"slow"}`, session: sid})
	}()
	require.Equal(t, "slow", <-f.started)
	require.Equal(t, 2, h.StreamCount())

	for _, r := range []request{
		{body: `{"jsonrpc":"2.0","id":3,"method":"echo"}`, session: sid},
		{body: initBody},
		{body: modernRequest("4", "tools/list", "", ""), header: modernHeaders("tools/list", "", nil)},
	} {
		resp := do(t, srv, r)
		body := readBody(t, resp)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
		a := decodeLimit(t, body)
		assert.Equal(t, "MaxStreams", a.Error.Data.Limit)
		assert.Contains(t, a.Error.Message, "MaxStreams = 2")
	}

	close(f.gate)
	resp := <-slow
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, readBody(t, resp))
	cancel()
	require.Eventually(t, func() bool { return h.StreamCount() == 0 }, 2*time.Second, 5*time.Millisecond)
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":5,"method":"echo"}`, session: sid})
	assert.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
}

// A session may have MaxSessionGETStreams GET streams open at once: one
// more, a resumption included, gets 429 naming the limit.
func TestHTTPMaxSessionGETStreams(t *testing.T) {
	srv, _, _ := startHTTP(t, &streamhttp.Options{MaxSessionGETStreams: 1})
	sid := initialize(t, srv, "2025-11-25")
	other := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()

	resp := do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": "7_0"}})
	body := readBody(t, resp)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	a := decodeLimit(t, body)
	assert.Equal(t, "MaxSessionGETStreams", a.Error.Data.Limit)
	assert.EqualValues(t, 1, a.Error.Data.Max)

	// Another session has its own count.
	get2 := doCtx(t, ctx, srv, request{method: http.MethodGet, session: other})
	defer get2.Body.Close()
	assert.Equal(t, http.StatusOK, get2.StatusCode)
}

// trickle sends a POST whose body arrives one byte every interval over a
// raw connection, and returns the status the server answers (0 when it
// closed the connection without one) and when.
func trickle(t *testing.T, addr string, interval time.Duration) (int, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	start := time.Now()
	_, err = fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 4096\r\n\r\n{")
	require.NoError(t, err)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		var ne net.Error
		require.False(t, assert.ErrorAs(t, err, &ne) && ne.Timeout(), "the trickled body still holds its handler")
		return 0, time.Since(start)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// A body trickled byte by byte is cut off after BodyReadTimeout (408, the
// connection closed), on a real server; the handler holds nothing after.
func TestHTTPBodyReadTimeout(t *testing.T) {
	srv, h, _ := startHTTP(t, &streamhttp.Options{BodyReadTimeout: 200 * time.Millisecond})
	addr := srv.Listener.Addr().String()
	require.True(t, strings.HasPrefix(addr, "127.0.0.1:"))
	var wg sync.WaitGroup
	type result struct {
		status  int
		elapsed time.Duration
	}
	results := make([]result, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, e := trickle(t, addr, 20*time.Millisecond)
			results[i] = result{s, e}
		}()
	}
	wg.Wait()
	for _, r := range results {
		assert.Equal(t, http.StatusRequestTimeout, r.status)
		assert.Less(t, r.elapsed, 2*time.Second)
	}
	require.Eventually(t, func() bool { return h.StreamCount() == 0 }, 2*time.Second, 5*time.Millisecond)
}

// The body's deadline ends with the body: an answer that comes later,
// and a GET stream, are not cut off.
func TestHTTPBodyReadTimeoutSparesStreams(t *testing.T) {
	srv, _, f := startHTTP(t, &streamhttp.Options{BodyReadTimeout: 50 * time.Millisecond})
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()
	go func() {
		<-f.started
		time.Sleep(250 * time.Millisecond)
		close(f.gate)
	}()
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"slow"}`, session: sid})
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, readBody(t, resp))
	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":3,"method":"broadcast"}`, session: sid})
	readBody(t, resp)
	evs := sseEvents(t, get.Body, 2) // the priming event, then the notification
	assert.Contains(t, evs[1].data, "unrelated", "the GET stream outlived the deadline")
}

// Refusals log what the peer sent cut to 64 bytes with its length, at a
// bounded rate; the suppressed lines are counted a second later.
func TestHTTPRefusalLogsBounded(t *testing.T) {
	var logs exampletest.SafeBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	srv, _, _ := startHTTP(t, &streamhttp.Options{Logger: logger})
	huge := strings.Repeat("a", 100<<10)
	for range 10 {
		resp := do(t, srv, request{body: initBody, header: map[string]string{"Host": huge}})
		readBody(t, resp)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	}
	out := logs.String()
	assert.LessOrEqual(t, len(out), 2048, out)
	assert.Contains(t, out, strings.Repeat("a", 64)+"...(102400 bytes)")
	lines := strings.Count(out, "Host not allowed")
	assert.GreaterOrEqual(t, lines, streamhttp.DefaultRefusalLogsPerSecond)
	assert.Less(t, lines, 10, "some lines are suppressed")

	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "suppressed="+strconv.Itoa(10-lines))
	}, 3*time.Second, 10*time.Millisecond, "the suppressed lines are counted")

	resp := do(t, srv, request{body: initBody, header: map[string]string{"Origin": "https://" + huge}})
	readBody(t, resp)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, logs.String(), `origin="https://`+strings.Repeat("a", 56)+`...(102408 bytes)"`)
}
