package mcp_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// chainSeen is what a Middleware saw a request answered with.
type chainSeen struct {
	method string
	code   int64 // 0: a result
	err    error
}

// chainRecorder is a Middleware that records, by request id, what the
// chain below it returned, calling every accessor of the request before
// and after next (none may panic, whatever the request was refused for).
type chainRecorder struct {
	mu   sync.Mutex
	seen map[string]chainSeen
	bad  []string // what an accessor got wrong
}

func (rec *chainRecorder) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, req *mcp.Request) (any, error) {
		rec.touch(ctx, req)
		res, err := next(ctx, req)
		rec.touch(ctx, req)
		if req.IsNotification() {
			return res, err
		}
		s := chainSeen{method: req.Method, err: err}
		var e *mcp.Error
		if errors.As(err, &e) {
			s.code = e.Code
		} else if err != nil {
			s.code = -1
		}
		rec.mu.Lock()
		rec.seen[string(req.ID)] = s
		rec.mu.Unlock()
		return res, err
	}
}

// touch calls every accessor of req and of its context.
func (rec *chainRecorder) touch(ctx context.Context, req *mcp.Request) {
	_ = req.ProtocolVersion()
	_ = req.ClientCapabilities()
	_ = req.ClientInfo()
	_ = req.LogLevel()
	_, _ = mcp.Params[map[string]any](req)
	_ = mcp.ToolCallFromContext(ctx)
	_ = mcp.PeerFromContext(ctx)
	_ = mcp.InputFromContext(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if mcp.RequestFromContext(ctx) != req {
		rec.bad = append(rec.bad, req.Method+": RequestFromContext is not the request")
	}
	if mcp.SessionFromContext(ctx) != req.Session || req.Session == nil {
		rec.bad = append(rec.bad, req.Method+": SessionFromContext is not the request's session")
	}
}

// answerOf returns what the middleware saw request id (its JSON) answered with.
func (rec *chainRecorder) answerOf(id string) (chainSeen, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	s, ok := rec.seen[id]
	return s, ok
}

// chainOptions returns server options whose Middleware records in a
// chainRecorder, with custom methods whose results cannot be sent: a JSON
// array (not an object, refused in 2026-07-28), a channel (not
// serializable) and one over 4 KiB (chainPipe's MaxMessageBytes); block
// waits for release.
func chainOptions(rec *chainRecorder, release <-chan struct{}) *mcp.ServerOptions {
	o := modernOptions(&modernTools{})
	rec.seen = map[string]chainSeen{}
	o.Middleware = []mcp.Middleware{rec.middleware}
	o.Methods = map[string]mcp.MethodHandler{
		"acme/array": func(context.Context, *mcp.Request) (any, error) { return []int{1}, nil },
		"acme/chan":  func(context.Context, *mcp.Request) (any, error) { return map[string]any{"c": make(chan int)}, nil },
		"acme/big": func(context.Context, *mcp.Request) (any, error) {
			return map[string]string{"text": strings.Repeat("x", 8<<10)}, nil
		},
		"acme/ok": func(context.Context, *mcp.Request) (any, error) { return map[string]string{"ok": "yes"}, nil },
		"acme/block": func(ctx context.Context, _ *mcp.Request) (any, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return map[string]string{}, nil
		},
	}
	return o
}

// chainPipe runs srv on an in-memory connection whose messages are at
// most 4 KiB, and returns its client end.
func chainPipe(t *testing.T, srv *mcp.Server) *rawConn {
	t.Helper()
	ct, st := transport.NewPipe(&transport.PipeOptions{MaxMessageBytes: 4 << 10})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(context.Background(), st) }()
	t.Cleanup(func() { ct.Close(); <-done })
	return &rawConn{t: t, tr: ct}
}

// chainCase is one request and the error its answer carries (0: a result).
type chainCase struct {
	name, id, line string
	code           int64
}

// checkChainCases sends each case on c and checks that the middleware saw
// exactly what the client received: the same id, and the same error code
// (or a result).
func checkChainCases(t *testing.T, c *rawConn, rec *chainRecorder, cases []chainCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.line)
			m := c.recv()
			require.Equal(t, tc.id, jsonOf(t, m["id"]), "the answer's id")
			seen, ok := rec.answerOf(tc.id)
			require.True(t, ok, "the middleware saw no answer to %s", tc.id)
			if tc.code == 0 {
				assert.Contains(t, m, "result")
				assert.Zero(t, seen.code, "the middleware saw %v", seen.err)
				return
			}
			require.Contains(t, m, "error", m)
			got := int64(m["error"].(map[string]any)["code"].(float64))
			assert.Equal(t, tc.code, got, "the client's code")
			assert.Equal(t, got, seen.code, "the middleware saw %v", seen.err)
		})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.bad)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return `"` + x + `"`
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	t.Fatalf("id %v", v)
	return ""
}

// 2026-07-28 requests: every refusal of the engine's gate and every result
// the engine or the transport cannot send reach the Middleware as the
// error the client gets, with the request's id.
func TestAnswerChainModernRefusals(t *testing.T) {
	rec := &chainRecorder{}
	c := chainPipe(t, mcp.NewServer(chainOptions(rec, nil)))
	const badMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	const oldMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}`
	checkChainCases(t, c, rec, []chainCase{
		{name: "served", id: `"ok"`, line: `{"jsonrpc":"2.0","id":"ok","method":"acme/ok","params":{` + modernMeta + `}}`},
		{name: "invalid _meta", id: `"badmeta"`, line: `{"jsonrpc":"2.0","id":"badmeta","method":"tools/list","params":{` + badMeta + `}}`, code: mcp.CodeInvalidParams},
		{name: "unsupported revision", id: `"old"`, line: `{"jsonrpc":"2.0","id":"old","method":"tools/list","params":{` + oldMeta + `}}`, code: -32022},
		{name: "unknown method", id: `7`, line: `{"jsonrpc":"2.0","id":7,"method":"acme/none","params":{` + modernMeta + `}}`, code: mcp.CodeMethodNotFound},
		{name: "2025 method", id: `8`, line: `{"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":"info",` + modernMeta + `}}`, code: mcp.CodeMethodNotFound},
		{name: "result not an object", id: `"array"`, line: `{"jsonrpc":"2.0","id":"array","method":"acme/array","params":{` + modernMeta + `}}`, code: mcp.CodeInternalError},
		{name: "result not serializable", id: `"chan"`, line: `{"jsonrpc":"2.0","id":"chan","method":"acme/chan","params":{` + modernMeta + `}}`, code: mcp.CodeInternalError},
		{name: "response over MaxMessageBytes", id: `"big"`, line: `{"jsonrpc":"2.0","id":"big","method":"acme/big","params":{` + modernMeta + `}}`, code: mcp.CodeInternalError},
	})
}

// What a Middleware returns for a refused request is what is answered: its
// own error, or even a result; a result it puts in place of the method's
// is checked after it (a JSON array is refused in 2026-07-28).
func TestAnswerChainMiddlewareReplaces(t *testing.T) {
	o := modernOptions(&modernTools{})
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			switch req.Method {
			case "acme/mine":
				return nil, &mcp.Error{Code: -32050, Message: "policy"}
			case "acme/welcome":
				return map[string]string{"hello": "anyway"}, nil
			case "tools/list":
				if strings.Contains(string(req.Params), "array") {
					return []string{"not", "an", "object"}, nil
				}
			}
			return res, err
		}
	}}
	c := startPlain(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/mine","params":{` + modernMeta + `}}`)
	m := c.recv()
	assert.Equal(t, float64(-32050), m["error"].(map[string]any)["code"], "the middleware's error replaces -32601")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/welcome","params":{` + modernMeta + `}}`)
	m = c.recv()
	require.Contains(t, m, "result", m)
	res := m["result"].(map[string]any)
	assert.Equal(t, "anyway", res["hello"])
	assert.Equal(t, "complete", res["resultType"], "a middleware's result is stamped as any other")
	c.send(`{"jsonrpc":"2.0","id":3,"method":"acme/welcome","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	m = c.recv()
	require.Contains(t, m, "result", "a request whose _meta was refused may be answered with a result too: %v", m)
	assert.Equal(t, "complete", m["result"].(map[string]any)["resultType"])
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"array",` + modernMeta + `}}`)
	m = c.recv()
	require.Contains(t, m, "error", m)
	e := m["error"].(map[string]any)
	assert.Equal(t, float64(mcp.CodeInternalError), e["code"])
	assert.Contains(t, e["message"], "JSON array")
}

// countedResult counts its encodings.
type countedResult struct{ n *atomic.Int32 }

func (c *countedResult) MarshalJSON() ([]byte, error) {
	c.n.Add(1)
	return []byte(`{"counted":true}`), nil
}

// A result is encoded once when the server has no Middleware (the
// encoding made below the chain is sent), and twice with Middleware,
// however many: once below the chain (its check), once after it (what the
// middleware returned, which it may have changed in place).
func TestAnswerChainEncodings(t *testing.T) {
	for _, tc := range []struct {
		name        string
		middlewares int
		want        int32
	}{
		{"no middleware", 0, 1},
		{"one middleware", 1, 2},
		{"two middlewares", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			o := modernOptions(&modernTools{})
			o.Methods = map[string]mcp.MethodHandler{
				"acme/counted": func(context.Context, *mcp.Request) (any, error) { return &countedResult{n: &n}, nil },
			}
			rec := &chainRecorder{seen: map[string]chainSeen{}}
			for range tc.middlewares {
				o.Middleware = append(o.Middleware, rec.middleware)
			}
			c := startPlain(t, o)
			c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/counted","params":{` + modernMeta + `}}`)
			m := c.recv()
			require.Contains(t, m, "result", m)
			assert.Equal(t, true, m["result"].(map[string]any)["counted"])
			assert.Equal(t, tc.want, n.Load())
		})
	}
}

// A middleware that must answer by a deadline gives next a context with
// that deadline and returns when next has returned (a middleware never
// returns before next): the handler, honouring its context, ends at the
// deadline, and the middleware's own answer is sent; nothing else is sent
// for the request (run with -race).
func TestAnswerChainMiddlewareDeadline(t *testing.T) {
	o := modernOptions(&modernTools{})
	o.Methods = map[string]mcp.MethodHandler{
		"acme/slow": func(ctx context.Context, _ *mcp.Request) (any, error) {
			<-ctx.Done()
			return map[string]string{"late": "yes"}, ctx.Err()
		},
		"acme/ok": func(context.Context, *mcp.Request) (any, error) { return map[string]string{"ok": "yes"}, nil },
	}
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method != "acme/slow" {
				return next(ctx, req)
			}
			ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			res, err := next(ctx, req)
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, &mcp.Error{Code: -32050, Message: "answered at the deadline"}
			}
			return res, err
		}
	}}
	c := startPlain(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/slow","params":{` + modernMeta + `}}`)
	m := c.recv()
	require.Contains(t, m, "error", m)
	assert.Equal(t, float64(-32050), m["error"].(map[string]any)["code"])
	c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/ok","params":{` + modernMeta + `}}`)
	m = c.recv()
	assert.Equal(t, float64(2), m["id"], "nothing else was sent for the first request")
}
