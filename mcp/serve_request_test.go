package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/mcp"
)

// prereadTransport hands ServeRequest its own reading of the message, as
// streamable HTTP does for a 2026-07-28 POST, and keeps what is written.
type prereadTransport struct {
	pre      []byte // the message it says it read
	maxDepth int    // the depth it says it read it with
	ok       bool   // whether it has a reading
	input    []byte // what Read returns once (then io.EOF); nil: Read waits for ctx
	raw      []byte // the bytes the hand-off says it was made for (see handoff.Of)
	refusal  *handoff.Refusal

	mu      sync.Mutex
	written [][]byte
	x       *handoff.Request // the last hand-off made
}

func (p *prereadTransport) Handoff() *handoff.Request {
	if !p.ok {
		return nil
	}
	m, derr := jsonrpc.Decode(p.pre, jsonrpc.DefaultMaxDepth)
	if derr != nil {
		panic(derr.Message)
	}
	x := &handoff.Request{Msg: m, Raw: p.raw, MaxDepth: int32(p.maxDepth), Reading: revision.Classify(m.Params), Refusal: p.refusal}
	p.mu.Lock()
	p.x = x
	p.mu.Unlock()
	return x
}

func (p *prereadTransport) Read(ctx context.Context) ([]byte, error) {
	p.mu.Lock()
	in := p.input
	p.input = nil
	p.mu.Unlock()
	switch {
	case in != nil:
		return in, nil
	case p.pre != nil: // the one message was read
		return nil, io.EOF
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (p *prereadTransport) Write(_ context.Context, msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written = append(p.written, append([]byte(nil), msg...))
	return nil
}

func (p *prereadTransport) Close() error { return nil }

func (p *prereadTransport) Kind() string { return "test" }

// ServeRequest serves the transport's reading of a modern request instead
// of reading the message again, unless the transport read it with a
// looser depth limit than the server's, or has no reading.
func TestServeRequestTakesTheTransportsReading(t *testing.T) {
	call := func(id, tool string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	}
	answer := func(text string) func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		return func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text(text)}}, nil
		}
	}
	opts := mcptest.ServerOptions(handlerTools{"a": answer("from the message"), "b": answer("from the reading")})
	srv := mcp.NewServer(opts)
	for _, tc := range []struct {
		name     string
		ok       bool
		maxDepth int
		wantID   string
		wantText string
		// otherBytes: the hand-off was made for other bytes (a wrapper's
		// Read changed them).
		otherBytes bool
	}{
		{"reading taken", true, srv.Options().MaxDepth, `"id":7`, "from the reading", false},
		{"looser depth: read again", true, srv.Options().MaxDepth + 1, `"id":1`, "from the message", false},
		{"no reading", false, 0, `"id":1`, "from the message", false},
		{"made for other bytes: read again", true, srv.Options().MaxDepth, `"id":1`, "from the message", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := call("1", "a")
			tr := &prereadTransport{pre: call("7", "b"), maxDepth: tc.maxDepth, ok: tc.ok, raw: msg}
			if tc.otherBytes {
				tr.raw = call("2", "a")
			}
			require.NoError(t, srv.ServeRequest(context.Background(), tr, msg))
			require.Len(t, tr.written, 1)
			assert.Contains(t, string(tr.written[0]), tc.wantID)
			assert.Contains(t, string(tr.written[0]), tc.wantText)
		})
		// A session asks the same after each Read.
		t.Run(tc.name+" (session)", func(t *testing.T) {
			msg := call("1", "a")
			tr := &prereadTransport{pre: call("7", "b"), maxDepth: tc.maxDepth, ok: tc.ok, input: msg, raw: msg}
			if tc.otherBytes {
				tr.raw = call("2", "a")
			}
			require.NoError(t, srv.Run(context.Background(), tr))
			tr.mu.Lock()
			defer tr.mu.Unlock()
			require.Len(t, tr.written, 1)
			assert.Contains(t, string(tr.written[0]), tc.wantID)
			assert.Contains(t, string(tr.written[0]), tc.wantText)
		})
	}
}

// The server records its answer's JSON-RPC error code in the transport's
// hand-off before it writes the answer (0 for a result), for the transport
// to give the answer its HTTP status; and the transport can end the request
// through the hand-off before the request's context ends.
func TestServeRequestAnswersThroughTheHandoff(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	started := make(chan struct{})
	srv := mcp.NewServer(mcptest.ServerOptions(handlerTools{
		"ok": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("ran")}}, nil
		},
		"wait": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}))
	for _, tc := range []struct {
		msg    string
		code   int64
		status int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok",` + meta + `}}`, 0, 200},
		{`{"jsonrpc":"2.0","id":2,"method":"acme/nothing","params":{` + meta + `}}`, mcp.CodeMethodNotFound, 404},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			mcp.CodeUnsupportedProtocolVersion, 400},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, mcp.CodeInvalidParams, 200},
	} {
		b := []byte(tc.msg)
		tr := &prereadTransport{pre: b, raw: b, maxDepth: srv.Options().MaxDepth, ok: true}
		require.NoError(t, srv.ServeRequest(context.Background(), tr, b))
		require.Len(t, tr.written, 1, tc.msg)
		require.NotNil(t, tr.x)
		assert.Equal(t, tc.code, tr.x.ErrorCode(), string(tr.written[0]))
		assert.Equal(t, tc.status, tr.x.Status(), string(tr.written[0]))
	}

	msg := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait",` + meta + `}}`
	b := []byte(msg)
	tr := &prereadTransport{pre: b, raw: b, maxDepth: srv.Options().MaxDepth, ok: true}
	done := make(chan error, 1)
	go func() { done <- srv.ServeRequest(context.Background(), tr, b) }()
	<-started
	tr.mu.Lock()
	x := tr.x
	tr.mu.Unlock()
	x.Abort() // the context is never cancelled: only the hand-off ends the request
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeRequest did not return after the hand-off was aborted")
	}
}

// A request handed over with the transport's refusal is answered with it
// instead of running its method, through Middleware when there is one
// (which sees the request and the refusal), and whether or not the
// server takes the transport's reading of the message; the hand-off
// records the refusal's code, and its status is the refusal's own.
func TestServeRequestAnswersAHandedOverRefusal(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"correlationId":"cid-1"}`
	var ran int
	tools := handlerTools{"ok": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		ran++
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("ran")}}, nil
	}}
	var seen []string
	record := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			var e *mcp.Error
			if errors.As(err, &e) {
				seen = append(seen, req.Method+" "+string(req.ID)+" "+strconv.FormatInt(e.Code, 10))
			}
			return res, err
		}
	}
	refusal := &handoff.Refusal{Code: mcp.CodeInvalidParams, Message: "Invalid params: refused by the transport", Status: 400}
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: refused by the transport","data":{"correlationId":"cid-1"}}}`
	for _, mws := range [][]mcp.Middleware{nil, {record}} {
		opts := mcptest.ServerOptions(tools)
		opts.Middleware = mws
		srv := mcp.NewServer(opts)
		for _, depth := range []int{srv.Options().MaxDepth, srv.Options().MaxDepth + 1} { // the reading taken, or the message read again
			t.Run(fmt.Sprintf("%d middleware, depth %d", len(mws), depth), func(t *testing.T) {
				ran, seen = 0, nil
				b := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok",` + meta + `}}`)
				tr := &prereadTransport{pre: b, raw: b, maxDepth: depth, ok: true, refusal: refusal}
				require.NoError(t, srv.ServeRequest(context.Background(), tr, b))
				require.Len(t, tr.written, 1)
				assert.JSONEq(t, want, string(tr.written[0]))
				assert.Zero(t, ran, "the method does not run")
				assert.Equal(t, int64(mcp.CodeInvalidParams), tr.x.ErrorCode())
				assert.Equal(t, 400, tr.x.Status(), "the refusal's own status")
				if len(mws) > 0 {
					assert.Equal(t, []string{"tools/call 1 -32602"}, seen)
				}
			})
		}
	}
}

// A _meta member no Go any can hold (a number beyond float64) is not the
// revision's business: parseRequestMeta passes and leaves it out of Meta,
// a 2026-07-28 request carrying one goes on to its method (an unknown one
// gets -32601), and tools/call, whose ToolCall.Meta it would be, answers
// -32602 naming it, as it does for a 2025 request.
func TestModernMetaMemberBeyondFloat64(t *testing.T) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x":1e400,"y":"z"}`
	rm, e := mcp.ParseRequestMetaForTest([]byte(`{` + meta + `}`))
	require.Nil(t, e)
	assert.Equal(t, mcp.Meta{"y": "z"}, rm.Meta)

	srv := mcp.NewServer(mcptest.ServerOptions(handlerTools{"a": func(context.Context, *mcp.ToolCall) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("ran")}}, nil
	}}))
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"an unknown method is not found", `{"jsonrpc":"2.0","id":1,"method":"acme/nothing","params":{` + meta + `}}`, `"code":-32601`},
		{"tools/call refuses the member", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a",` + meta + `}}`, `"code":-32602,"message":"Invalid params: \"/_meta/x\": value out of range"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &prereadTransport{}
			require.NoError(t, srv.ServeRequest(context.Background(), tr, []byte(tc.msg)))
			require.Len(t, tr.written, 1)
			assert.Contains(t, string(tr.written[0]), tc.want)
		})
	}
}

// A middleware that replaces a tools/call's params replaces its _meta too:
// ToolCall.Meta is read from the params the handler gets, in both
// revisions, not from the request as it arrived.
func TestToolCallMetaFollowsRewrittenParams(t *testing.T) {
	got := make(chan mcp.Meta, 1)
	opts := mcptest.ServerOptions(handlerTools{"a": func(_ context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
		got <- call.Meta
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text("ran")}}, nil
	}})
	opts.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method == "tools/call" {
				req.Params = json.RawMessage(strings.Replace(string(req.Params), `"trace":"client"`, `"trace":"middleware"`, 1))
			}
			return next(ctx, req)
		}
	}}
	srv := mcp.NewServer(opts)
	const msg = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"trace":"client",` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	tr := &prereadTransport{}
	require.NoError(t, srv.ServeRequest(context.Background(), tr, []byte(msg)))
	require.Len(t, tr.written, 1)
	assert.Equal(t, mcp.Meta{"trace": "middleware"}, <-got, string(tr.written[0]))
}
