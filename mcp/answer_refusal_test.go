package mcp_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// modernLine is a 2026-07-28 request with id id, declaring elicitation,
// with correlationId c-<id>; params are members before its _meta.
func modernLine(id int, method, params string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"correlationId":"c-` + fmt.Sprint(id) + `"}`
	if params != "" {
		meta = params + "," + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, id, method, meta)
}

// A middleware that asks for input (InputRequired) on every request, the
// refused ones included: a request refused before its method runs cannot
// ask for input, and is answered -32603; the process survives, and the
// connection goes on.
func TestRefusalMiddlewareAsksForInput(t *testing.T) {
	consent := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.IsNotification() || mcp.InputFromContext(ctx).Has("ok") || req.Method == "tools/list" {
				return next(ctx, req)
			}
			return nil, mcp.InputRequired(map[string]mcp.InputRequest{"ok": askName}, nil)
		}
	}
	for _, tc := range []struct{ name, line string }{
		{"unknown method (-32601)", `{"jsonrpc":"2.0","id":1,"method":"acme/nope","params":{` + modernMeta + `}}`},
		{"unsupported revision (-32022)", `{"jsonrpc":"2.0","id":1,"method":"acme/nope","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"invalid _meta (-32602)", `{"jsonrpc":"2.0","id":1,"method":"acme/nope","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":7}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := modernOptions(&modernTools{})
			o.Middleware = []mcp.Middleware{consent}
			c := startPlain(t, o)
			c.send(tc.line)
			m := c.recv()
			require.Contains(t, m, "error", m)
			assert.Equal(t, float64(mcp.CodeInternalError), m["error"].(map[string]any)["code"], m)
			c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`)
			assert.Contains(t, c.recv(), "result", "the connection goes on")
		})
	}
}

// A request refused for MaxInFlight runs nothing of its method, with or
// without Middleware: not its input rounds, whose single-use requestState
// it would spend. Both refusals are CodeServerBusy without a runId (a call
// with no name too), and the retry of the input round afterwards succeeds.
func TestRefusalRunsNoInputRounds(t *testing.T) {
	for _, mw := range []bool{false, true} {
		t.Run(fmt.Sprint("middleware=", mw), func(t *testing.T) {
			b := newBlocker()
			defer close(b.release)
			o := modernOptions(&modernTools{})
			o.StateSingleUse = true
			o.MaxInFlight = 1
			o.Methods = map[string]mcp.MethodHandler{"x/block": b.handle}
			if mw {
				o.Middleware = []mcp.Middleware{passThrough}
			}
			c := connectRaw(t, mcp.NewServer(o), false, false)
			c.send(modernLine(1, "tools/call", `"name":"ask","arguments":{}`))
			state := c.recv()["result"].(map[string]any)["requestState"].(string)
			c.send(modernLine(2, "x/block", ""))
			require.Eventually(t, func() bool { return b.running.Load() == 1 }, 5*time.Second, time.Millisecond)
			retry := fmt.Sprintf(`"name":"ask","arguments":{},"requestState":%q,"inputResponses":{"name":{"action":"accept","content":{"name":"Ann"}}}`, state)
			for id, params := range map[int]string{3: `"arguments":{}`, 4: retry} {
				c.send(modernLine(id, "tools/call", params)) // over the bound
				m := c.recv()
				require.Contains(t, m, "error", m)
				e := m["error"].(map[string]any)
				require.Equal(t, float64(mcp.CodeServerBusy), e["code"], m)
				data := e["data"].(map[string]any)
				assert.NotContains(t, data, "runId", "no input round ran: %v", m)
				assert.Equal(t, "MaxInFlight", data["details"].(map[string]any)["limit"])
			}
			b.release <- struct{}{}
			c.recv() // x/block's answer
			c.send(modernLine(5, "tools/call", retry))
			m := c.recv()
			require.Contains(t, m, "result", "the state was not spent by the refusal: %v", m)
			assert.Contains(t, fmt.Sprint(m["result"]), "Hello, Ann!")
		})
	}
}

// A middleware that blocks on a refusal (a semaphore honouring its
// context, held by a request in flight) does not wedge the connection:
// reading is handed over, so the cancellation of the request holding the
// semaphore is read, which frees it, and the refusal is answered.
func TestRefusalMiddlewareBlocksWithoutWedging(t *testing.T) {
	for _, modern := range []bool{false, true} {
		t.Run(map[bool]string{false: "2025-11-25", true: "2026-07-28"}[modern], func(t *testing.T) {
			if !modern && !served2025 {
				t.Skip("the 2025 rules are not compiled in")
			}
			meta := ""
			if modern {
				meta = `,"params":{` + modernMeta + `}`
			}
			sem := make(chan struct{}, 1)
			b := newBlocker()
			defer close(b.release)
			o := modernOptions(&modernTools{})
			o.Methods = map[string]mcp.MethodHandler{"x/block": b.handle}
			o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, req *mcp.Request) (any, error) {
					if req.IsNotification() {
						return next(ctx, req)
					}
					select {
					case sem <- struct{}{}:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					defer func() { <-sem }()
					return next(ctx, req)
				}
			}}
			c := connectRaw(t, mcp.NewServer(o), !modern, false)
			c.send(`{"jsonrpc":"2.0","id":1,"method":"x/block"` + meta + `}`)
			require.Eventually(t, func() bool { return b.running.Load() == 1 }, 5*time.Second, time.Millisecond)
			c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/nope"` + meta + `}`) // refused: -32601, its middleware waits
			cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`
			if modern {
				cancel = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,` + modernMeta + `}}`
			}
			c.send(cancel)
			require.Eventually(t, func() bool { return b.running.Load() == 0 }, 5*time.Second, time.Millisecond,
				"the cancellation was read while the refusal's middleware waited")
			m := c.recv() // request 1 was cancelled: no answer for it
			assert.Equal(t, float64(2), m["id"], m)
			assert.Equal(t, float64(mcp.CodeMethodNotFound), m["error"].(map[string]any)["code"], m)
		})
	}
}

// The context of a refusal's middleware ends when the connection ends.
func TestRefusalContextEndsWithConnection(t *testing.T) {
	entered, returned := make(chan struct{}), make(chan error, 1)
	o := modernOptions(&modernTools{})
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method != "acme/nope" {
				return next(ctx, req)
			}
			close(entered)
			<-ctx.Done()
			returned <- ctx.Err()
			return next(ctx, req)
		}
	}}
	c := connectRaw(t, mcp.NewServer(o), false, false)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/nope","params":{` + modernMeta + `}}`)
	<-entered
	require.NoError(t, c.tr.Close())
	select {
	case err := <-returned:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the refusal's context did not end with its connection")
	}
}

// A 2026-07-28 request refused because of its method (it does not exist,
// or it is not offered) is a request of its own _meta: its accessors
// answer for it, not for the connection, as for a request served.
func TestRefusedModernRequestAccessors(t *testing.T) {
	for _, method := range []string{"acme/nope", "tools/list"} {
		t.Run(method, func(t *testing.T) {
			o := modernOptions(&modernTools{})
			type seen struct {
				version     string
				elicitation bool
			}
			got := make(chan seen, 1)
			o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, req *mcp.Request) (any, error) {
					got <- seen{req.ProtocolVersion(), req.ClientCapabilities().Elicitation != nil}
					return next(ctx, req)
				}
			}}
			c := startPlain(t, o)
			c.send(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + modernMeta + `}}`)
			c.recv()
			assert.Equal(t, seen{mcp.Version20260728, true}, <-got)
		})
	}
}

// A redacting middleware rewrites the tool result next returned in place
// and returns it: what it wrote is what is sent, in both revision
// families.
func TestMiddlewareRedactsInPlace(t *testing.T) {
	redact := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			res, err := next(ctx, req)
			if tr, ok := res.(*mcp.CallToolResult); ok {
				tr.Content = []mcp.Content{mcp.Text("[REDACTED]")}
			}
			return res, err
		}
	}
	for _, tc := range []struct {
		name   string
		modern bool
	}{{"2026-07-28", true}, {"2025-11-25", false}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.modern && !served2025 {
				t.Skip("the 2025 rules are not compiled in")
			}
			o := modernOptions(&modernTools{})
			o.Middleware = []mcp.Middleware{redact}
			c := connectRaw(t, mcp.NewServer(o), !tc.modern, false)
			params := `"name":"hello","arguments":{}`
			if tc.modern {
				params += "," + modernMeta
			}
			c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + params + `}}`)
			m := c.recv()
			for m["id"] == nil { // the tool's log notification
				m = c.recv()
			}
			require.Contains(t, m, "result", m)
			content := m["result"].(map[string]any)["content"].([]any)
			require.Len(t, content, 1)
			assert.Equal(t, "[REDACTED]", content[0].(map[string]any)["text"])
		})
	}
}

// The end of Server.Run waits for a refusal still running through the
// middleware chain (its drain), as for a request in flight.
func TestRefusalCountsInDrain(t *testing.T) {
	entered := make(chan struct{})
	var finished atomic.Bool
	o := modernOptions(&modernTools{})
	o.ShutdownTimeout = 10 * time.Second // the drain waits this long at most
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method == "acme/nope" {
				close(entered)
				time.Sleep(100 * time.Millisecond) // ignores its context: the drain waits anyway
				finished.Store(true)
			}
			return next(ctx, req)
		}
	}}
	ct, st := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- mcp.NewServer(o).Run(context.Background(), st) }()
	c := &rawConn{t: t, tr: ct}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/nope","params":{` + modernMeta + `}}`)
	<-entered
	require.NoError(t, ct.Close())
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	assert.True(t, finished.Load(), "Run returned before the refusal's middleware did")
}

// Refusals are bounded as requests are: a client sending refused requests
// to a middleware that blocks on them gets at most MaxInFlight of them
// handed over to goroutines of their own (plus the one the reading
// goroutine then runs itself, reading nothing more meanwhile); once the
// middleware lets them go, every one is answered.
func TestRefusalsBoundedByMaxInFlight(t *testing.T) {
	const max, sent = 2, 8
	release := make(chan struct{})
	var running, peak atomic.Int32
	o := modernOptions(&modernTools{})
	o.MaxInFlight = max
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method == "acme/nope" {
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				<-release
				running.Add(-1)
			}
			return next(ctx, req)
		}
	}}
	c := connectRaw(t, mcp.NewServer(o), false, false)
	for id := 1; id <= sent; id++ {
		c.send(modernLine(id, "acme/nope", ""))
	}
	require.Eventually(t, func() bool { return running.Load() == max+1 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // nothing more is read meanwhile
	assert.Equal(t, int32(max+1), peak.Load())
	close(release)
	ids := map[float64]bool{}
	for range sent {
		m := c.recv()
		assert.Equal(t, float64(mcp.CodeMethodNotFound), m["error"].(map[string]any)["code"], m)
		ids[m["id"].(float64)] = true
	}
	assert.Len(t, ids, sent)
	assert.Equal(t, int32(max+1), peak.Load())
}
