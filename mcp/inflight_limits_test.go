package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// blocker is a custom method that blocks until released (or its request
// ends), counting the handlers running.
type blocker struct {
	running atomic.Int32
	release chan struct{}
}

func newBlocker() *blocker { return &blocker{release: make(chan struct{})} }

func (b *blocker) handle(ctx context.Context, _ *mcp.Request) (any, error) {
	b.running.Add(1)
	defer b.running.Add(-1)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return map[string]any{"done": true}, nil
}

// A greedy client pipelines MaxInFlight+50 calls of a custom method that
// blocks, on one connection, in both revisions: exactly MaxInFlight are
// in flight, the 50 others are answered at once with -32000 and a
// retryable RESOURCE_EXHAUSTED naming MaxInFlight (with their
// correlationId), the goroutines stay bounded, and once the handlers are
// released the connection serves new calls. A subscriptions/listen, which
// lasts, does not count. Every message is checked against its revision's
// schema.
func TestMaxInFlightBoundsPipelinedRequests(t *testing.T) {
	const greed = 50
	const v26 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"correlationId":%q}`
	tests := []struct {
		name   string
		max    int // ServerOptions.MaxInFlight (0: the default)
		bound  int // the bound in effect
		modern bool
		listen bool // a listen is open on the connection first (2026-07-28)
	}{
		{name: "2025 session", max: 20, bound: 20},
		{name: "2025 session, default bound", bound: 256},
		{name: "2026-07-28", max: 20, bound: 20, modern: true},
		{name: "2026-07-28 with a listen open", max: 20, bound: 20, modern: true, listen: true},
		{name: "2026-07-28, default bound", bound: 256, modern: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.modern && !served2025 {
				t.Skip("the 2025 rules are compiled out (keel_omit2025)")
			}
			b := newBlocker()
			o := mcptest.ServerOptions(&modernTools{})
			o.MaxInFlight = tt.max
			o.Methods = map[string]mcp.MethodHandler{"x/block": b.handle}
			srv := mcp.NewServer(o)
			// A custom method's result has no schema: the connection is
			// not validated as a whole; each refusal is checked against
			// its revision's schema below.
			c := connectRaw(t, srv, !tt.modern, false)
			rev := "2025-11-25"
			if tt.modern {
				rev = mcptest.RevisionModern
			}
			t.Cleanup(func() {
				select {
				case <-b.release:
				default:
					close(b.release)
				}
			})
			line := func(id int, method, params string) string {
				cid := fmt.Sprintf("c-%d", id)
				meta := `"_meta":{"correlationId":"` + cid + `"}`
				if tt.modern {
					meta = fmt.Sprintf(v26, cid)
				}
				if params != "" {
					meta = params + "," + meta
				}
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, id, method, meta)
			}
			if tt.listen {
				c.send(line(0, "subscriptions/listen", `"notifications":{}`))
				require.Equal(t, "notifications/subscriptions/acknowledged", c.recv()["method"])
			}
			before := runtime.NumGoroutine()

			n := tt.bound + greed
			sent := make(chan struct{})
			go func() { // the pipe blocks when full: write while the test reads
				defer close(sent)
				for id := 1; id <= n; id++ {
					if c.tr.Write(context.Background(), []byte(line(id, "x/block", ""))) != nil {
						return
					}
				}
			}()
			// The calls past the bound are answered at once, in order;
			// the others are still in their handlers.
			for want := tt.bound + 1; want <= n; want++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				raw, err := c.tr.Read(ctx)
				cancel()
				require.NoError(t, err, "call %d is answered at once", want)
				mcptest.ValidateServerMessage(t, rev, nil, raw)
				var m map[string]any
				require.NoError(t, json.Unmarshal(raw, &m))
				assert.EqualValues(t, want, m["id"], "%v", m)
				e, ok := m["error"].(map[string]any)
				require.True(t, ok, "the call over the bound is refused: %v", m)
				assert.EqualValues(t, mcp.CodeServerBusy, e["code"])
				assert.Contains(t, e["message"], fmt.Sprintf("MaxInFlight is %d", tt.bound))
				data := e["data"].(map[string]any)
				assert.Equal(t, "RESOURCE_EXHAUSTED", data["code"])
				assert.Equal(t, true, data["retryable"])
				assert.Equal(t, map[string]any{"limit": "MaxInFlight", "max": float64(tt.bound)}, data["details"])
				assert.Equal(t, fmt.Sprintf("c-%d", want), data["correlationId"])
			}
			<-sent
			require.Eventually(t, func() bool { return b.running.Load() == int32(tt.bound) }, 5*time.Second, time.Millisecond)
			time.Sleep(20 * time.Millisecond)
			assert.EqualValues(t, tt.bound, b.running.Load(), "exactly the bound is in flight")
			grown := runtime.NumGoroutine() - before
			assert.LessOrEqual(t, grown, tt.bound+10, "a goroutine per request in flight, not per request sent")

			// Released, the calls in flight are answered, and the
			// connection serves new calls (as many as the bound, at once).
			close(b.release)
			answered := map[float64]bool{}
			for range tt.bound {
				m := c.recv()
				require.Contains(t, m, "result", "%v", m)
				answered[m["id"].(float64)] = true
			}
			assert.Len(t, answered, tt.bound)
			for id := n + 1; id <= n+tt.bound; id++ {
				c.send(line(id, "x/block", ""))
			}
			for range tt.bound {
				m := c.recv()
				require.Contains(t, m, "result", "a new call is served: %v", m)
			}
		})
	}
}

// A negative MaxInFlight is an option error: the server fails at
// start-up.
func TestValidateRefusesNegativeMaxInFlight(t *testing.T) {
	o := &mcp.ServerOptions{MaxInFlight: -1}
	err := o.Validate()
	var oe *mcp.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "MaxInFlight", oe.Option)
	assert.Contains(t, oe.Problem, "MaxInFlight is -1")
	assert.PanicsWithError(t, err.Error(), func() { mcp.NewServer(o) })
	assert.Equal(t, 256, mcp.NewServer(nil).Options().MaxInFlight, "zero means the default")
}
