package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A store error is logged at Error level unless it is the request's own
// end (its context cancelled or past its deadline), which is logged at
// Debug: a client that goes away is no fault of the store. Either way the
// client gets the same masked -32603.
func TestStoreErrorLogLevel(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		level string
	}{
		{"store failure", errors.New("disk on fire"), "level=ERROR"},
		{"cancelled", fmt.Errorf("query: %w", context.Canceled), "level=DEBUG"},
		{"deadline", context.DeadlineExceeded, "level=DEBUG"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			ss := &Session{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			var st taskHost
			e := st.storeError(&Request{Session: ss}, "t1", tc.err)
			require.NotNil(t, e)
			assert.Equal(t, int64(CodeInternalError), e.Code)
			assert.Equal(t, "Internal error: the task store failed", e.Message)
			assert.Contains(t, logs.String(), tc.level)
			assert.NotContains(t, e.Message, "disk on fire", "the cause is logged, never sent")
		})
	}
}
