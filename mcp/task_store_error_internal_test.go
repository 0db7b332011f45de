package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A store error is logged at Error level unless it is the request's own
// end (the request's context is done and the store returned its error),
// which is logged at Debug: a client that goes away is no fault of the
// store. A store's own timeout, under a live request, stays an error.
// Either way the client gets the same masked -32603.
func TestStoreErrorLogLevel(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	cases := []struct {
		name  string
		ctx   context.Context
		err   error
		level string
	}{
		{"store failure", context.Background(), errors.New("disk on fire"), "level=ERROR"},
		{"the request cancelled", cancelled, fmt.Errorf("query: %w", context.Canceled), "level=DEBUG"},
		{"the request's deadline", expired, context.DeadlineExceeded, "level=DEBUG"},
		{"the store's own timeout", context.Background(), fmt.Errorf("pool: %w", context.DeadlineExceeded), "level=ERROR"},
		{"no request context", nil, context.Canceled, "level=ERROR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ss := &Session{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			req := &Request{Session: ss}
			req.f.ctx = tc.ctx
			var st taskHost
			e := st.storeError(req, "t1", tc.err)
			require.NotNil(t, e)
			assert.Equal(t, int64(CodeInternalError), e.Code)
			assert.Equal(t, "Internal error: the task store failed", e.Message)
			assert.Contains(t, logs.String(), tc.level)
			assert.NotContains(t, e.Message, "disk on fire", "the cause is logged, never sent")
		})
	}
}
