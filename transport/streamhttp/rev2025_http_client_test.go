//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// The client transport: session id and protocol version learned from the
// initialize exchange and sent afterwards, JSON and SSE answers, the GET
// stream for unrelated messages, server requests answered, DELETE on Close.
func TestHTTPClientTransport(t *testing.T) {
	f := newFakeServer()
	h := streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, Logger: quiet})
	var log headerLog
	srv := newServerHandler(t, h, log.wrap(h))
	tr := streamhttp.NewClientTransport(srv.URL+"/mcp", &streamhttp.ClientOptions{BearerToken: "tok", Logger: quiet})
	assert.Equal(t, "http", tr.Kind())

	write(t, tr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}`, readMsg(t, tr))
	assert.NotEmpty(t, tr.SessionID())
	write(t, tr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// JSON answer.
	write(t, tr, `{"jsonrpc":"2.0","id":2,"method":"echo","params":{"x":1}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"x":1}}`, readMsg(t, tr))
	// SSE answer with a related notification first.
	write(t, tr, `{"jsonrpc":"2.0","id":3,"method":"notify"}`)
	assert.Equal(t, noteRelated, readMsg(t, tr))
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{}}`, readMsg(t, tr))
	// A server request on the request's stream, answered by the client.
	write(t, tr, `{"jsonrpc":"2.0","id":4,"method":"ask"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":"s1","method":"ping"}`, readMsg(t, tr))
	write(t, tr, `{"jsonrpc":"2.0","id":"s1","result":{"ok":1}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{"ok":1}}`, readMsg(t, tr))
	awaitGETStream(t, tr)
	assert.True(t, slices.ContainsFunc(log.lines(), func(l string) bool { return strings.HasPrefix(l, "GET session=yes version=2025-06-18") }))

	require.NoError(t, tr.Close())
	_, err := tr.Read(context.Background())
	assert.Error(t, err)
	assert.ErrorIs(t, tr.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"x"}`)), transport.ErrClosed)
	require.Eventually(t, func() bool { return h.SessionCount() == 0 }, 2*time.Second, time.Millisecond, "DELETE ended the session")

	lines := log.lines()
	assert.Equal(t, "POST session=no version= auth=Bearer tok", lines[0])
	assert.Equal(t, "POST session=yes version=2025-06-18 auth=Bearer tok", lines[1])
	assert.Equal(t, "DELETE session=yes version=2025-06-18 auth=Bearer tok", lines[len(lines)-1])
}

// A Write whose JSON answer finds Read's queue full (the GET stream filled
// it) still returns, so a caller that writes and reads on one goroutine
// does not deadlock; nothing is lost.
func TestHTTPClientWriteDoesNotWaitForReader(t *testing.T) {
	f := newFakeServer()
	h := streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, Logger: quiet})
	srv := newServerHandler(t, h, h)
	tr := streamhttp.NewClientTransport(srv.URL+"/mcp", &streamhttp.ClientOptions{Logger: quiet})
	defer tr.Close()
	write(t, tr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	readMsg(t, tr)
	write(t, tr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	awaitGETStream(t, tr)

	const notes = 40 // more than the queue holds
	writeSoon := func(msg string) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- tr.Write(context.Background(), []byte(msg)) }()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatalf("Write of %s blocked on the full read queue", msg)
		}
	}
	writeSoon(`{"jsonrpc":"2.0","id":2,"method":"flood","params":{"n":` + strconv.Itoa(notes) + `}}`)
	time.Sleep(50 * time.Millisecond) // let the GET stream fill the queue
	writeSoon(`{"jsonrpc":"2.0","id":3,"method":"echo","params":{"x":3}}`)

	// Everything arrives, once: both answers and every flood note (a late
	// notification of awaitGETStream may come too). readMsg fails the test
	// after 5 s without a message.
	flood := strings.Replace(unrelated, "unrelated", "flood", 1)
	answers := map[string]int{`{"jsonrpc":"2.0","id":2,"result":{}}`: 0, `{"jsonrpc":"2.0","id":3,"result":{"x":3}}`: 0}
	for n := 0; n < notes || answers[`{"jsonrpc":"2.0","id":2,"result":{}}`] == 0 || answers[`{"jsonrpc":"2.0","id":3,"result":{"x":3}}`] == 0; {
		switch msg := readMsg(t, tr); msg {
		case flood:
			n++
		case unrelated:
		default:
			_, ok := answers[msg]
			require.True(t, ok, "unexpected message %s", msg)
			answers[msg]++
			require.Equal(t, 1, answers[msg], "answer delivered twice: %s", msg)
		}
	}
}

// A POST stream the server closes before the response (SSE polling) is
// resumed with GET and Last-Event-ID after the server's retry interval.
func TestHTTPClientResumesDroppedStream(t *testing.T) {
	f := newFakeServer()
	h := streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, Logger: quiet, RetryInterval: 5 * time.Millisecond})
	var log headerLog
	srv := newServerHandler(t, h, log.wrap(h))
	tr := streamhttp.NewClientTransport(srv.URL+"/mcp", &streamhttp.ClientOptions{Logger: quiet, DisableGETStream: true})
	defer tr.Close()
	write(t, tr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	readMsg(t, tr)
	write(t, tr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	write(t, tr, `{"jsonrpc":"2.0","id":2,"method":"poll"}`)
	<-f.started
	assert.Contains(t, readMsg(t, tr), "while away")
	close(f.gate)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, readMsg(t, tr))
	assert.Contains(t, log.lines(), "GET session=yes version=2025-11-25 auth= last=2_0")
}

// Statuses other than 200 and 202 are errors; 404 means the session ended.
func TestHTTPClientStatusErrors(t *testing.T) {
	srv, h, _ := startHTTP(t, nil)
	tr := streamhttp.NewClientTransport(srv.URL+"/mcp", &streamhttp.ClientOptions{Logger: quiet})
	defer tr.Close()
	write(t, tr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	readMsg(t, tr)
	resp := do(t, srv, request{method: http.MethodDelete, session: tr.SessionID()})
	readBody(t, resp)
	err := tr.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"echo"}`))
	var se *streamhttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.StatusCode)
	assert.Contains(t, se.Error(), "Session not found")

	protected := httptest.NewServer(streamhttp.RequireBearer(testVerifier, &streamhttp.BearerOptions{Resource: testResource, Logger: quiet})(h))
	defer protected.Close()
	calls := 0
	tr2 := streamhttp.NewClientTransport(protected.URL, &streamhttp.ClientOptions{Logger: quiet,
		TokenSource: func(context.Context) (string, error) {
			calls++
			if calls > 1 {
				return "", errors.New("no refresh token")
			}
			return "nope", nil
		}})
	defer tr2.Close()
	err = tr2.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusUnauthorized, se.StatusCode)
	assert.Contains(t, se.WWWAuthenticate, `resource_metadata="`+prmURL+`"`)
	err = tr2.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	assert.ErrorContains(t, err, "no refresh token")
}

// A 404 for the session: the error matches transport.ErrSessionNotFound,
// the transport forgets the session and refuses everything but a new
// handshake (without sending it), which starts a new session with its own
// GET stream. A 404 to a request without a session is only a status.
func TestHTTPClientSessionEnded(t *testing.T) {
	f := newFakeServer()
	h := streamhttp.NewHandler(&streamhttp.Options{Serve: f.serve, Logger: quiet})
	var log headerLog
	srv := newServerHandler(t, h, log.wrap(h))
	tr := streamhttp.NewClientTransport(srv.URL+"/mcp", &streamhttp.ClientOptions{Logger: quiet})
	defer tr.Close()
	// Late notifications of awaitGETStream's broadcasts may come anywhere.
	next := func() string {
		t.Helper()
		for {
			if msg := readMsg(t, tr); msg != unrelated {
				return msg
			}
		}
	}
	handshake := func() {
		write(t, tr, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
		assert.Contains(t, next(), `"id":1,"result"`)
		write(t, tr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	handshake()
	awaitGETStream(t, tr)
	old := tr.SessionID()
	readBody(t, do(t, srv, request{method: http.MethodDelete, session: old}))

	err := tr.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"echo"}`))
	require.ErrorIs(t, err, transport.ErrSessionNotFound)
	var se *streamhttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.StatusCode)
	assert.Empty(t, tr.SessionID())
	sent := len(log.lines())
	err = tr.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":3,"method":"echo"}`))
	require.ErrorIs(t, err, transport.ErrSessionNotFound)
	assert.False(t, errors.As(err, &se), "refused locally, not by the server")
	assert.Len(t, log.lines(), sent, "nothing sent")

	handshake()
	assert.NotEmpty(t, tr.SessionID())
	assert.NotEqual(t, old, tr.SessionID())
	awaitGETStream(t, tr)
	write(t, tr, `{"jsonrpc":"2.0","id":4,"method":"echo","params":{"x":4}}`)
	assert.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{"x":4}}`, next())

	nowhere := httptest.NewServer(http.NotFoundHandler())
	defer nowhere.Close()
	stray := streamhttp.NewClientTransport(nowhere.URL, &streamhttp.ClientOptions{Logger: quiet})
	defer stray.Close()
	err = stray.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.StatusCode)
	assert.NotErrorIs(t, err, transport.ErrSessionNotFound)
}
