package streamhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// headerLog records the MCP headers of each request a handler sees.
type headerLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *headerLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		line := r.Method + " session=" + boolStr(r.Header.Get("Mcp-Session-Id") != "") +
			" version=" + r.Header.Get("Mcp-Protocol-Version") + " auth=" + r.Header.Get("Authorization")
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			line += " last=" + id
		}
		l.reqs = append(l.reqs, line)
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *headerLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

func boolStr(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func readMsg(t *testing.T, tr transport.Transport) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := tr.Read(ctx)
	require.NoError(t, err)
	return string(msg)
}

func write(t *testing.T, tr transport.Transport, msg string) {
	t.Helper()
	require.NoError(t, tr.Write(context.Background(), []byte(msg)))
}

// unrelated is the fake server's notification on the GET stream.
const unrelated = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"unrelated"}}`

// awaitGETStream returns once the client's GET stream is open: unrelated
// notifications are dropped before that, so it broadcasts until one
// arrives, reading every answer.
func awaitGETStream(t *testing.T, tr transport.Transport) {
	t.Helper()
	for id := 100; ; id++ {
		require.Less(t, id, 1000, "no notification on the GET stream")
		write(t, tr, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"broadcast"}`)
		got := false
		for answered := false; !answered; {
			switch msg := readMsg(t, tr); msg {
			case unrelated:
				got = true
			case `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":{}}`:
				answered = true
			default:
				t.Fatalf("unexpected message %s", msg)
			}
		}
		if got {
			return
		}
	}
}

// A request whose stream ends without a response and cannot be resumed is
// answered with a JSON-RPC error, so that its caller does not wait forever.
func TestHTTPClientFailsUnresumableStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n"))
	}))
	defer srv.Close()
	tr := streamhttp.NewClientTransport(srv.URL, &streamhttp.ClientOptions{Logger: quiet})
	defer tr.Close()
	write(t, tr, `{"jsonrpc":"2.0","id":7,"method":"echo"}`)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/x"}`, readMsg(t, tr))
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"transport: the server's SSE stream ended before the response"}}`, readMsg(t, tr))
}
