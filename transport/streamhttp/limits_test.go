package streamhttp_test

import (
	"bufio"
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
