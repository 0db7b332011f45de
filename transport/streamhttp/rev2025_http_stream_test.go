//go:build !keel_omit2025

package streamhttp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport/streamhttp"
)

// A notification the handler sends about its request rides the request's
// POST, which becomes an SSE stream: priming event (id, retry, empty data)
// first, then the notification, then the response; the GET stream gets
// nothing.
func TestHTTPRelatedMessagesRidePOSTStream(t *testing.T) {
	srv, _, _ := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	getEvents := make(chan []event, 1)
	go func() { getEvents <- sseEvents(t, get.Body, -1) }()

	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"notify"}`, session: sid, version: "2025-11-25"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	evs := sseEvents(t, resp.Body, -1)
	require.Len(t, evs, 3)
	assert.Equal(t, event{id: "2_0", retry: "1000"}, evs[0], "priming event")
	assert.Equal(t, event{id: "2_1", data: noteRelated}, evs[1])
	assert.Equal(t, event{id: "2_2", data: `{"jsonrpc":"2.0","id":1,"result":{}}`}, evs[2])

	cancel()
	got := <-getEvents
	require.Len(t, got, 1, "only the GET stream's own priming event")
	assert.Equal(t, "0_0", got[0].id)
}

// A request from the server to the client, sent while handling a client
// request, rides that request's stream; the client's answer is POSTed (202)
// and the handler's response follows on the same stream.
func TestHTTPServerRequestRidesPOSTStream(t *testing.T) {
	srv, _, _ := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-06-18")
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"ask"}`, session: sid, version: "2025-06-18"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	defer resp.Body.Close()
	first := sseEvents(t, resp.Body, 1)
	require.Len(t, first, 1, "no priming event before 2025-11-25")
	assert.Equal(t, event{id: "2_1", data: `{"jsonrpc":"2.0","id":"s1","method":"ping"}`}, first[0])

	answer := do(t, srv, request{body: `{"jsonrpc":"2.0","id":"s1","result":{"pong":true}}`, session: sid})
	assert.Empty(t, readBody(t, answer))
	assert.Equal(t, http.StatusAccepted, answer.StatusCode)

	rest := sseEvents(t, resp.Body, -1)
	require.Len(t, rest, 1)
	assert.Equal(t, event{id: "2_2", data: `{"jsonrpc":"2.0","id":1,"result":{"pong":true}}`}, rest[0])
}

// Messages not tied to a request go to the GET stream; without one,
// notifications are dropped and requests fail.
func TestHTTPUnrelatedMessagesGoToGETStream(t *testing.T) {
	srv, _, _ := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-11-25")

	// No GET stream yet: the notification is dropped, the call answered.
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"broadcast"}`, session: sid})
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, readBody(t, resp))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	assert.Equal(t, "text/event-stream", get.Header.Get("Content-Type"))
	defer get.Body.Close()
	second := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	assert.Equal(t, http.StatusConflict, second.StatusCode, "one GET stream per session")
	readBody(t, second)

	resp = do(t, srv, request{body: `{"jsonrpc":"2.0","id":2,"method":"broadcast"}`, session: sid})
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, readBody(t, resp))
	evs := sseEvents(t, get.Body, 2)
	assert.Equal(t, event{id: "0_0", retry: "1000"}, evs[0])
	assert.Equal(t, "0_1", evs[1].id)
	assert.Contains(t, evs[1].data, "unrelated")
}

// A dropped GET stream is resumed with Last-Event-ID: the events sent
// meanwhile are replayed, in order, then the stream continues.
func TestHTTPResumeGETStreamAfterDrop(t *testing.T) {
	srv, _, _ := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	broadcast := func(id string) {
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":` + id + `,"method":"broadcast"}`, session: sid})
		readBody(t, resp)
	}
	broadcast("1")
	evs := sseEvents(t, get.Body, 2)
	require.Equal(t, "0_1", evs[1].id)
	cancel() // the connection drops
	get.Body.Close()
	broadcast("2")
	broadcast("3")

	var resumed *http.Response
	require.Eventually(t, func() bool {
		resumed = do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": "0_1"}})
		if resumed.StatusCode == http.StatusConflict { // the server has not noticed the drop yet
			readBody(t, resumed)
			return false
		}
		return true
	}, 2*time.Second, 2*time.Millisecond)
	require.Equal(t, http.StatusOK, resumed.StatusCode)
	defer resumed.Body.Close()
	replay := sseEvents(t, resumed.Body, 2)
	assert.Equal(t, []string{"0_2", "0_3"}, []string{replay[0].id, replay[1].id})
	broadcast("4")
	live := sseEvents(t, resumed.Body, 1)
	assert.Equal(t, "0_4", live[0].id)

	// Unknown or malformed ids are refused.
	for _, id := range []string{"garbage", "7_3", "0_99"} {
		resp := do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": id}})
		readBody(t, resp)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, id)
	}
}

// SSE polling (2025-11-25): the handler closes its request's stream after
// the priming event; the client resumes with GET and Last-Event-ID, gets
// what was sent meanwhile, then the response, and the stream ends.
func TestHTTPSSEPollingResumesPOSTStream(t *testing.T) {
	srv, _, f := startHTTP(t, nil)
	sid := initialize(t, srv, "2025-11-25")
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"poll"}`, session: sid, version: "2025-11-25"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	evs := sseEvents(t, resp.Body, -1)
	resp.Body.Close()
	require.Equal(t, []event{{id: "2_0", retry: "1000"}}, evs, "only the priming event, then the connection closes")
	<-f.started

	get := do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": "2_0"}})
	require.Equal(t, http.StatusOK, get.StatusCode)
	defer get.Body.Close()
	replay := sseEvents(t, get.Body, 1)
	assert.Equal(t, "2_1", replay[0].id)
	assert.Contains(t, replay[0].data, "while away")
	close(f.gate)
	rest := sseEvents(t, get.Body, -1)
	require.Len(t, rest, 1, "the response, then the stream ends")
	assert.Equal(t, event{id: "2_2", data: `{"jsonrpc":"2.0","id":1,"result":{}}`}, rest[0])

	// The finished stream can still be replayed from its last id.
	again := do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": "2_1"}})
	require.Equal(t, http.StatusOK, again.StatusCode)
	assert.Equal(t, []event{{id: "2_2", data: `{"jsonrpc":"2.0","id":1,"result":{}}`}}, sseEvents(t, again.Body, -1))
	again.Body.Close()
}

// Closing a stream before its response is refused where the revision
// forbids it, and when resumption is disabled.
func TestHTTPCloseSSEStreamRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		opts    *streamhttp.Options
		version string
	}{
		"revision before 2025-11-25": {nil, "2025-06-18"},
		"resumption disabled":        {&streamhttp.Options{DisableResumption: true}, "2025-11-25"},
	} {
		t.Run(name, func(t *testing.T) {
			srv, _, f := startHTTP(t, tc.opts)
			sid := initialize(t, srv, tc.version)
			resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"poll"}`, session: sid})
			assert.Contains(t, readBody(t, resp), streamhttp.ErrNotResumable.Error())
			_ = f
		})
	}
}

// ResponseSSE answers every request with an SSE stream; ResponseJSON with
// one JSON body, related messages then going to the GET stream.
func TestHTTPResponseModes(t *testing.T) {
	t.Run("SSE", func(t *testing.T) {
		srv, _, _ := startHTTP(t, &streamhttp.Options{ResponseMode: streamhttp.ResponseSSE})
		sid := initialize(t, srv, "2025-11-25")
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"echo"}`, session: sid})
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		evs := sseEvents(t, resp.Body, -1)
		resp.Body.Close()
		assert.Equal(t, []event{{id: "2_0", retry: "1000"}, {id: "2_1", data: `{"jsonrpc":"2.0","id":1,"result":{}}`}}, evs)
	})
	t.Run("JSON", func(t *testing.T) {
		srv, _, _ := startHTTP(t, &streamhttp.Options{ResponseMode: streamhttp.ResponseJSON, RetryInterval: 250 * time.Millisecond})
		sid := initialize(t, srv, "2025-11-25")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
		defer get.Body.Close()
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"notify"}`, session: sid})
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, readBody(t, resp))
		evs := sseEvents(t, get.Body, 2)
		assert.Equal(t, event{id: "0_0", retry: "250"}, evs[0])
		assert.Equal(t, event{id: "0_1", data: noteRelated}, evs[1])
	})
	t.Run("auto switches a slow call to SSE", func(t *testing.T) {
		srv, _, f := startHTTP(t, &streamhttp.Options{SSEAfter: 5 * time.Millisecond})
		sid := initialize(t, srv, "2025-11-25")
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":1,"method":"slow"}`, session: sid})
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"), "headers arrive before the response")
		first := sseEvents(t, resp.Body, 1)
		assert.Equal(t, event{id: "2_0", retry: "1000"}, first[0])
		close(f.gate)
		assert.Equal(t, []event{{id: "2_1", data: `{"jsonrpc":"2.0","id":1,"result":{}}`}}, sseEvents(t, resp.Body, -1))
		resp.Body.Close()
	})
}

// A request the client cancels is never answered: its POST ends with an
// empty stream.
func TestHTTPCancelledRequestEndsItsStream(t *testing.T) {
	srv, _, f := startHTTP(t, &streamhttp.Options{SSEAfter: -1})
	sid := initialize(t, srv, "2025-11-25")
	type result struct {
		status int
		ct     string
		body   string
	}
	done := make(chan result, 1)
	go func() {
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":4,"method":"slow"}`, session: sid})
		done <- result{resp.StatusCode, resp.Header.Get("Content-Type"), readBody(t, resp)}
	}()
	<-f.started
	resp := do(t, srv, request{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`, session: sid})
	readBody(t, resp)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	r := <-done
	assert.Equal(t, result{200, "text/event-stream", ""}, r)
	close(f.gate) // the late response is dropped
}

// The event store is bounded: events evicted are reported as lost (400)
// rather than replayed with a gap.
func TestHTTPResumeAfterEviction(t *testing.T) {
	store := streamhttp.NewMemoryEventStore(&streamhttp.MemoryEventStoreOptions{MaxBytesPerSession: 200})
	srv, _, _ := startHTTP(t, &streamhttp.Options{EventStore: store})
	sid := initialize(t, srv, "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	get := doCtx(t, ctx, srv, request{method: http.MethodGet, session: sid})
	require.Equal(t, http.StatusOK, get.StatusCode)
	for i := range 5 {
		resp := do(t, srv, request{body: `{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"broadcast"}`, session: sid})
		readBody(t, resp)
	}
	evs := sseEvents(t, get.Body, 6)
	require.Equal(t, "0_5", evs[5].id)
	cancel()
	get.Body.Close()
	require.Eventually(t, func() bool {
		resp := do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": "0_1"}})
		body := readBody(t, resp)
		return resp.StatusCode == http.StatusBadRequest && strings.Contains(body, "no longer available")
	}, 2*time.Second, 2*time.Millisecond)
	// The dropped GET is detached a moment after the client went away;
	// until then resuming its stream is a 409.
	var resp *http.Response
	require.Eventually(t, func() bool {
		resp = do(t, srv, request{method: http.MethodGet, session: sid, header: map[string]string{"Last-Event-ID": "0_4"}})
		if resp.StatusCode == http.StatusConflict {
			readBody(t, resp)
			return false
		}
		return true
	}, 2*time.Second, 2*time.Millisecond)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	defer resp.Body.Close()
	assert.Equal(t, "0_5", sseEvents(t, resp.Body, 1)[0].id)
}
