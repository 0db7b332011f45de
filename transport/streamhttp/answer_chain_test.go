package streamhttp_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// chainCodes records, by request id, the error code the middleware chain
// returned (0: a result).
type chainCodes struct {
	mu    sync.Mutex
	codes map[string]int64
}

func (cc *chainCodes) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, req *mcp.Request) (any, error) {
		_, _, _, _ = req.ProtocolVersion(), req.ClientCapabilities(), req.ClientInfo(), req.LogLevel()
		res, err := next(ctx, req)
		if req.IsNotification() {
			return res, err
		}
		code := int64(0)
		var e *mcp.Error
		if errors.As(err, &e) {
			code = e.Code
		} else if err != nil {
			code = -1
		}
		cc.mu.Lock()
		cc.codes[string(req.ID)] = code
		cc.mu.Unlock()
		return res, err
	}
}

func (cc *chainCodes) code(id string) (int64, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c, ok := cc.codes[id]
	return c, ok
}

// chainHandler is an mcp.Server behind NewServerHandler whose Middleware
// records in cc, with custom methods whose results cannot be sent: a JSON
// array, a channel, and one over the HTTP session's MaxMessageBytes.
func chainHandler(t *testing.T, cc *chainCodes) *streamhttp.Handler {
	cc.codes = map[string]int64{}
	o := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
	o.Middleware = []mcp.Middleware{cc.middleware}
	o.Methods = map[string]mcp.MethodHandler{
		"acme/ok":    func(context.Context, *mcp.Request) (any, error) { return map[string]string{"ok": "yes"}, nil },
		"acme/array": func(context.Context, *mcp.Request) (any, error) { return []int{1}, nil },
		"acme/chan":  func(context.Context, *mcp.Request) (any, error) { return map[string]any{"c": make(chan int)}, nil },
		"acme/big": func(context.Context, *mcp.Request) (any, error) {
			return map[string]string{"text": strings.Repeat("x", transport.DefaultMaxMessageBytes)}, nil
		},
	}
	h := streamhttp.NewServerHandler(mcp.NewServer(o), &streamhttp.Options{Logger: quiet, ResponseMode: streamhttp.ResponseJSON})
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// httpChainCase is one POST and the error code of its answer (0: a result).
type httpChainCase struct {
	name, id, body string
	version        string
	header         map[string]string
	code           int64
}

// checkHTTPChain posts each case and checks that the middleware saw the
// answer the client got: the same id, the same error code (or a result).
func checkHTTPChain(t *testing.T, hs *httptest.Server, cc *chainCodes, session string, cases []httpChainCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, hs, request{body: tc.body, version: tc.version, header: tc.header, session: session})
			body := readBody(t, resp)
			a := decodeAnswer(t, body)
			require.Equal(t, tc.id, string(a.ID), body)
			seen, ok := cc.code(tc.id)
			require.True(t, ok, "the middleware saw no answer to %s", tc.id)
			if tc.code == 0 {
				assert.Nil(t, a.Error, body)
				assert.Zero(t, seen)
				return
			}
			require.NotNil(t, a.Error, body)
			assert.Equal(t, tc.code, a.Error.Code, body)
			assert.Equal(t, a.Error.Code, seen, "the middleware saw what the client got")
		})
	}
}

// 2026-07-28 POSTs, each served on its own: the engine's refusals and the
// results that cannot be sent reach the Middleware as the error the
// client gets. (The checks the handler makes before the Server has the
// message, of its headers, _meta and revision, are the transport's
// answers: TestHTTPModernChecks.)
func TestHTTPAnswerChainModern(t *testing.T) {
	cc := &chainCodes{}
	hs := newServer(t, chainHandler(t, cc))
	post := func(name, id, method, meta string, code int64) httpChainCase {
		return httpChainCase{name: name, id: id, body: modernRequest(id, method, "", meta), version: modern, header: modernHeaders(method, "", nil), code: code}
	}
	checkHTTPChain(t, hs, cc, "", []httpChainCase{
		post("served", `"ok"`, "acme/ok", "", 0),
		post("unknown method", `7`, "acme/none", "", mcp.CodeMethodNotFound),
		post("result not an object", `"array"`, "acme/array", "", mcp.CodeInternalError),
		post("result not serializable", `"chan"`, "acme/chan", "", mcp.CodeInternalError),
		post("response over MaxMessageBytes", `"big"`, "acme/big", "", mcp.CodeInternalError),
	})
}
