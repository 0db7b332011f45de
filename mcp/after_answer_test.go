package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// waitEvents waits until l (a clientLog: any recorder of lines) has
// recorded n more lines, and returns them.
func waitEvents(t *testing.T, l *clientLog, n int) []string {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool { got = append(got, l.take()...); return len(got) >= n }, 5*time.Second, time.Millisecond, "%q", got)
	return got
}

// The functions AfterAnswer registers run once each, in order, after the
// handler chain returned; for a request refused before its method (here
// an unknown one), a notification, and a request whose handler panicked
// as well; a panic in one of them is recovered, and the server serves on.
func TestAfterAnswer(t *testing.T) {
	log := &clientLog{}
	var held *mcp.Request
	o := modernOptions(&modernTools{})
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			id := strings.Trim(string(req.ID), `"`)
			req.AfterAnswer(func() { log.add("after " + req.Method + " " + id) })
			res, err := next(ctx, req)
			log.add("returned " + req.Method + " " + id)
			return res, err
		}
	}}
	o.Methods = map[string]mcp.MethodHandler{
		"acme/job": func(ctx context.Context, req *mcp.Request) (any, error) {
			held = req
			req.AfterAnswer(func() { log.add("first") })
			req.AfterAnswer(func() { panic("boom") })
			req.AfterAnswer(func() { log.add("third") })
			return map[string]string{}, nil
		},
		"acme/panic": func(ctx context.Context, req *mcp.Request) (any, error) {
			panic("handler")
		},
	}
	o.Notifications = map[string]mcp.MethodHandler{"acme/note": func(context.Context, *mcp.Request) (any, error) { return nil, nil }}
	c := startPlain(t, o)

	c.send(`{"jsonrpc":"2.0","id":"j","method":"acme/job","params":{` + modernMeta + `}}`)
	require.Contains(t, c.recv(), "result")
	assert.Equal(t, []string{"returned acme/job j", "after acme/job j", "first", "third"}, waitEvents(t, log, 4))

	// Registered after the request ended: at once, on the caller's goroutine.
	ran := false
	held.AfterAnswer(func() { ran = true })
	assert.True(t, ran)

	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"u","method":"acme/none","params":{` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":"p","method":"acme/panic","params":{` + modernMeta + `}}`,
	} {
		c.send(line)
		require.Contains(t, c.recv(), "error")
	}
	c.send(`{"jsonrpc":"2.0","method":"acme/note","params":{` + modernMeta + `}}`)
	c.send(`{"jsonrpc":"2.0","id":"j2","method":"acme/job","params":{` + modernMeta + `}}`)
	require.Contains(t, c.recv(), "result", "the server serves on after a panic in an AfterAnswer function")
	assert.Equal(t, []string{
		"returned acme/none u", "after acme/none u",
		"after acme/panic p", // the panic went through the middleware
		"returned acme/note ", "after acme/note ",
		"returned acme/job j2", "after acme/job j2", "first", "third",
	}, waitEvents(t, log, 9))
}
