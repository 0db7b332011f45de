//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// A 2025 session: the refusals of the state gate and of the method
// table, a request whose id is in use, and the results that cannot be
// sent reach the Middleware as the error the client gets.
func TestAnswerChainLegacyRefusals(t *testing.T) {
	rec := &chainRecorder{}
	release := make(chan struct{})
	c := chainPipe(t, mcp.NewServer(chainOptions(rec, release)))
	checkChainCases(t, c, rec, []chainCase{
		{name: "before initialize", id: `"early"`, line: `{"jsonrpc":"2.0","id":"early","method":"tools/list"}`, code: mcp.CodeNotInitialized},
		{name: "initialize", id: `"init"`, line: rawInitLine},
	})
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	checkChainCases(t, c, rec, []chainCase{
		{name: "served", id: `1`, line: `{"jsonrpc":"2.0","id":1,"method":"acme/ok"}`},
		{name: "unknown method", id: `2`, line: `{"jsonrpc":"2.0","id":2,"method":"acme/none"}`, code: mcp.CodeMethodNotFound},
		{name: "2026-07-28 method", id: `3`, line: `{"jsonrpc":"2.0","id":3,"method":"server/discover"}`, code: mcp.CodeMethodNotFound},
		{name: "result not serializable", id: `4`, line: `{"jsonrpc":"2.0","id":4,"method":"acme/chan"}`, code: mcp.CodeInternalError},
		{name: "response over MaxMessageBytes", id: `5`, line: `{"jsonrpc":"2.0","id":5,"method":"acme/big"}`, code: mcp.CodeInternalError},
		{name: "a JSON array is a 2025 result", id: `6`, line: `{"jsonrpc":"2.0","id":6,"method":"acme/array"}`},
	})
	// A request whose id an in-flight request has.
	c.send(`{"jsonrpc":"2.0","id":"dup","method":"acme/block"}`)
	checkChainCases(t, c, rec, []chainCase{
		{name: "id in use", id: `"dup"`, line: `{"jsonrpc":"2.0","id":"dup","method":"acme/ok"}`, code: mcp.CodeInvalidRequest},
	})
	seen, _ := rec.answerOf(`"dup"`)
	assert.Equal(t, "acme/ok", seen.method, "the refused request is the one the middleware saw")
	close(release)
	m := c.recv()
	assert.Contains(t, m, "result", "the request in flight is answered as usual")
}

// In a 2025-03-26 batch, initialize is refused through the chain like any
// refusal, its part of the batch's answer the error the middleware saw.
func TestAnswerChainBatchRefusal(t *testing.T) {
	rec := &chainRecorder{}
	c := chainPipe(t, mcp.NewServer(chainOptions(rec, nil)))
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	require.Contains(t, c.recv(), "result")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`[{"jsonrpc":"2.0","id":"again","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}},{"jsonrpc":"2.0","id":"p","method":"ping"}]`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := c.tr.Read(ctx)
	require.NoError(t, err)
	var parts []map[string]any
	require.NoError(t, json.Unmarshal(b, &parts), string(b))
	require.Len(t, parts, 2)
	for _, p := range parts {
		seen, ok := rec.answerOf(jsonOf(t, p["id"]))
		require.True(t, ok, "the middleware saw no answer to %v", p["id"])
		if p["id"] == "again" {
			assert.Equal(t, float64(mcp.CodeInvalidRequest), p["error"].(map[string]any)["code"])
			assert.Equal(t, int64(mcp.CodeInvalidRequest), seen.code, "the middleware saw %v", seen.err)
			continue
		}
		assert.Contains(t, p, "result")
		assert.Zero(t, seen.code)
	}
}

// On the wire, what an AfterAnswer function sends follows the answer; a
// request the client cancelled is not answered, and its functions run
// all the same.
func TestAfterAnswerLegacy(t *testing.T) {
	log := &clientLog{}
	o := modernOptions(&modernTools{})
	o.Methods = map[string]mcp.MethodHandler{
		"acme/job": func(ctx context.Context, req *mcp.Request) (any, error) {
			req.AfterAnswer(func() {
				_ = req.Session.Notify(context.WithoutCancel(ctx), "acme/started", map[string]string{"job": "1"})
			})
			return map[string]string{"job": "1"}, nil
		},
		"acme/wait": func(ctx context.Context, req *mcp.Request) (any, error) {
			req.AfterAnswer(func() { log.add("after wait: " + context.Cause(ctx).Error()) })
			log.add("waiting")
			<-ctx.Done()
			return map[string]string{}, nil
		},
	}
	c := connectRaw(t, mcp.NewServer(o), true, false)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/job"}`)
	m := c.recv()
	assert.Contains(t, m, "result", "the answer comes first")
	m = c.recv()
	assert.Equal(t, "acme/started", m["method"], "then what the function sent")

	c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/wait"}`)
	waitEvents(t, log, 1)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	assert.Equal(t, []string{"after wait: context canceled"}, waitEvents(t, log, 1))
	c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	m = c.recv()
	assert.Equal(t, float64(3), m["id"], "the cancelled request was not answered")
}

// A middleware may return, in place of the result next returned, a value
// of any kind, a struct holding an uncomparable value included: it is
// encoded and answered (the Server never compares it with ==, which would
// panic).
func TestAnswerChainMiddlewareResultKinds(t *testing.T) {
	type holder struct{ V any }
	results := map[string]any{
		"struct": holder{V: map[string]int{"a": 1}},
		"map":    map[string]any{"m": []int{1}},
		"slice":  []any{map[string]int{"s": 1}},
	}
	o := modernOptions(&modernTools{})
	o.Methods = map[string]mcp.MethodHandler{
		"acme/kind": func(_ context.Context, req *mcp.Request) (any, error) {
			return holder{V: map[string]int{"handler": 1}}, nil
		},
	}
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			p, _ := mcp.Params[struct {
				Kind string `json:"kind"`
			}](req)
			if r, ok := results[p.Kind]; ok {
				return r, nil
			}
			return res, err
		}
	}}
	c := chainPipe(t, mcp.NewServer(o))
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	require.Contains(t, c.recv(), "result")
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, kind := range []string{"struct", "map", "slice", "handler's"} {
		c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/kind","params":{"kind":"` + kind + `"}}`)
		m := c.recv()
		assert.Contains(t, m, "result", "%s: %v", kind, m)
	}
}
