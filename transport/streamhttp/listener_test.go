package streamhttp_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// acceptAll accepts connections of ln until it closes, and closes each
// when its client does, as a server would (the rest when the test ends).
func acceptAll(t *testing.T, ln net.Listener) {
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				_, _ = io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
}

// dialFrom connects from the loopback address ip and reports whether the
// connection stays open (true) or the server closes it at once.
func dialFrom(t *testing.T, ip, addr string) (net.Conn, bool) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	return c, errors.As(err, &ne) && ne.Timeout()
}

// LimitListener closes connections beyond MaxConnsPerPeer from one
// address (IPv6 by /64) and beyond MaxConns in all, at accept; a closed
// connection makes room; connections of trusted proxies count in the
// total only; refusals are logged at a bounded rate, naming the limit.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var logs exampletest.SafeBuffer
	lln := streamhttp.LimitListener(ln, &streamhttp.ListenerOptions{MaxConns: 4, MaxConnsPerPeer: 2,
		TrustedProxies: []string{"127.0.0.9"}, LogsPerSecond: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.Equal(t, 4, lln.MaxConns())
	assert.Equal(t, 2, lln.MaxConnsPerPeer())
	acceptAll(t, lln)
	addr := ln.Addr().String()

	first, open := dialFrom(t, "127.0.0.2", addr)
	require.True(t, open)
	_, open = dialFrom(t, "127.0.0.2", addr)
	require.True(t, open)
	_, open = dialFrom(t, "127.0.0.2", addr)
	assert.False(t, open, "a third connection from one address is closed")
	assert.Equal(t, 2, lln.PeerConnCount(netip.MustParseAddr("127.0.0.2")))

	_, open = dialFrom(t, "127.0.0.3", addr)
	assert.True(t, open, "another address is served")
	_, open = dialFrom(t, "127.0.0.9", addr)
	assert.True(t, open, "a trusted proxy has no per-peer bound")
	_, open = dialFrom(t, "127.0.0.4", addr)
	assert.False(t, open, "beyond MaxConns every address is refused")
	assert.Equal(t, 4, lln.ConnCount())

	first.Close()
	require.Eventually(t, func() bool { return lln.ConnCount() == 3 }, 2*time.Second, 5*time.Millisecond,
		"a connection the client closed is freed once the server closes it")
	for range 5 {
		dialFrom(t, "127.0.0.2", addr)
	}
	out := logs.String()
	assert.Contains(t, out, "limit=MaxConnsPerPeer")
	assert.Contains(t, out, "limit=MaxConns ")
	assert.LessOrEqual(t, strings.Count(out, "connection refused"), 3, "refusals are logged at a bounded rate:\n%s", out)
}

// The default MaxConns stays below the process's open-file limit, and
// the default MaxConnsPerPeer below a tenth of it (TestListenerDefaults
// for given limits).
func TestLimitListenerDefaults(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lln := streamhttp.LimitListener(ln, nil)
	defer lln.Close()
	assert.Equal(t, max(1, min(streamhttp.DefaultMaxConnsPerPeer, lln.MaxConns()/10)), lln.MaxConnsPerPeer())
	assert.LessOrEqual(t, lln.MaxConns(), streamhttp.DefaultMaxConns)
	assert.Positive(t, lln.MaxConns())
	assert.GreaterOrEqual(t, streamhttp.DefaultMaxConnsPerPeer, streamhttp.DefaultMaxStreamsPerPeer,
		"a peer can have a connection for each stream it may hold")
	assert.Panics(t, func() { streamhttp.LimitListener(ln, &streamhttp.ListenerOptions{TrustedProxies: []string{"proxy"}}) })
}

// serveHTTPServer serves hs on a fresh loopback listener until the test
// ends, and returns its address.
func serveHTTPServer(t *testing.T, hs *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// NewHTTPServer: a keep-alive connection left idle is closed after
// IdleTimeout; net/http's error log goes to the slog logger.
func TestNewHTTPServerIdleTimeout(t *testing.T) {
	var logs exampletest.SafeBuffer
	hs := streamhttp.NewHTTPServer(http.NotFoundHandler(), &streamhttp.HTTPServerOptions{IdleTimeout: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	assert.Equal(t, streamhttp.DefaultReadHeaderTimeout, hs.ReadHeaderTimeout)
	assert.Equal(t, streamhttp.DefaultMaxHeaderBytes, hs.MaxHeaderBytes)
	addr := serveHTTPServer(t, hs)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the idle connection is closed")
	assert.Less(t, time.Since(start), 3*time.Second)

	hs.ErrorLog.Print("http: TLS handshake error from 192.0.2.1:1234: EOF")
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "TLS handshake error")
}

// net/http's error log is bounded as refusal logs are: a peer that fails
// TLS handshakes in a loop writes a few clipped lines, not one line of any
// length per handshake.
func TestNewHTTPServerErrorLogBounded(t *testing.T) {
	var logs exampletest.SafeBuffer
	hs := streamhttp.NewHTTPServer(http.NotFoundHandler(), &streamhttp.HTTPServerOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	long := strings.Repeat("x", 16<<10)
	start := time.Now()
	for range 200 {
		hs.ErrorLog.Print("http: TLS handshake error from 192.0.2.1:1234: " + long)
	}
	// A burst, then the rate for the time the loop took.
	allowed := streamhttp.DefaultRefusalLogsPerSecond * (2 + int(time.Since(start)/time.Second))
	out := logs.String()
	lines := strings.Count(out, "\n")
	assert.LessOrEqual(t, lines, allowed, "lines are rate-limited")
	assert.Positive(t, lines)
	assert.Less(t, len(out), lines*4<<10, "each line is clipped")
	assert.Contains(t, out, "TLS handshake error")
}

// NewHTTPServer's WriteTimeout bounds each write, not a response: a
// stream that a client keeps reading outlives it, a write to a client that
// stopped reading fails after it.
func TestNewHTTPServerWriteTimeout(t *testing.T) {
	const timeout = 150 * time.Millisecond
	stuck := make(chan error, 1)
	hs := streamhttp.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.URL.Path == "/stream" { // small writes, for 4 write timeouts
			for range 20 {
				if _, err := w.Write([]byte("data: tick\n\n")); err != nil {
					return
				}
				_ = rc.Flush()
				time.Sleep(timeout / 5)
			}
			return
		}
		chunk := bytes.Repeat([]byte("x"), 64<<10) // until the client's buffers are full
		for {
			if _, err := w.Write(chunk); err != nil {
				stuck <- err
				return
			}
		}
	}), &streamhttp.HTTPServerOptions{WriteTimeout: timeout, Logger: quiet})
	assert.Zero(t, hs.WriteTimeout)
	addr := serveHTTPServer(t, hs)

	start := time.Now()
	resp, err := http.Get("http://" + addr + "/stream")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, 20, bytes.Count(body, []byte("tick")), "the stream outlives the write timeout")
	assert.Greater(t, time.Since(start), 2*timeout)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n") // and never read
	require.NoError(t, err)
	select {
	case err := <-stuck:
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("a write to a client that does not read never failed")
	}
}

// A connection of a LimitListener keeps what net/http looks for on a
// *net.TCPConn: CloseWrite, with which it half-closes a connection after
// an error response so that the client reads the response, and ReadFrom.
func TestLimitListenerConnCloseWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	lln := streamhttp.LimitListener(ln, nil)
	defer lln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	c, err := lln.Accept()
	require.NoError(t, err)
	defer c.Close()
	_, ok := c.(io.ReaderFrom)
	assert.True(t, ok, "ReadFrom is passed through")
	cw, ok := c.(interface{ CloseWrite() error })
	require.True(t, ok, "CloseWrite is passed through")

	_, err = c.(io.ReaderFrom).ReadFrom(strings.NewReader("answer"))
	require.NoError(t, err)
	require.NoError(t, cw.CloseWrite())
	require.NoError(t, client.SetDeadline(time.Now().Add(5*time.Second)))
	got, err := io.ReadAll(client)
	require.NoError(t, err, "the client reads to EOF: the server's side is half-closed")
	assert.Equal(t, "answer", string(got))
	_, err = client.Write([]byte("x"))
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err, "the server still reads")
	assert.Equal(t, "x", string(b))
}
