package streamhttp_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport/streamhttp"
)

// A 2026-07-28 tools/call over streamable HTTP whose handler outlasts its
// response deadline is answered TIMEOUT at the deadline, not when the
// handler ends; Server.StopTasks still waits for that handler.
func TestHTTPModernDeadlineAnswersAtOnce(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "stateful", true: "stateless"}[stateless], func(t *testing.T) {
			release := make(chan struct{})
			var returned atomic.Bool
			reg := registry.New(nil)
			registry.MustRegister(reg, "stuck", "Ignores its context", func(context.Context, struct{}) (string, error) {
				<-release // ignores its context
				returned.Store(true)
				return "late", nil
			}, &registry.ToolOptions{Timeout: 100 * time.Millisecond})
			srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, nil), Logger: slog.New(slog.DiscardHandler)})
			h := streamhttp.NewServerHandler(srv, &streamhttp.Options{Stateless: stateless})
			ts := httptest.NewServer(h)
			defer ts.Close()
			defer h.Close()
			var once atomic.Bool
			free := func() {
				if once.CompareAndSwap(false, true) {
					close(release)
				}
			}
			defer free()
			time.AfterFunc(2*time.Second, free) // a call held until the handler ends fails the test rather than hanging it

			ctx := t.Context()
			c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: mcp.Version20260728, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, c.Connect(ctx, streamhttp.NewClientTransport(ts.URL, nil)))
			defer c.Close()

			start := time.Now()
			_, err := c.CallTool(ctx, "stuck", nil)
			took := time.Since(start)
			var se *mcp.StructuredError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, mcp.ErrTimeout, se.Code)
			assert.Less(t, took, 300*time.Millisecond, "answered at the deadline, not when the handler ends")
			assert.False(t, returned.Load(), "the handler still runs")

			// The shutdown waits for the handler that runs on.
			require.NoError(t, h.Shutdown(ctx))
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			assert.True(t, errors.Is(srv.StopTasks(short), context.DeadlineExceeded), "StopTasks waits for the detached handler")
			free()
			require.NoError(t, srv.StopTasks(ctx))
			assert.True(t, returned.Load(), "StopTasks returned after the handler")
		})
	}
}
