package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

const secretDSN = "postgres://app:hunter2@db.internal:5432/prod"

// An admission policy's plain error and a handler's error wrapping
// errors.ErrUnsupported keep their codes (UNAUTHORIZED, NOT_IMPLEMENTED)
// but their text is masked as a handler's plain error is: the client is
// told a fixed text (errors.ErrUnsupported's own), the whole text goes to
// the log; with ExposeErrorText the client is told the whole text.
func TestPlainErrorTextOfStagesIsMasked(t *testing.T) {
	for _, expose := range []bool{false, true} {
		t.Run(fmt.Sprint("expose=", expose), func(t *testing.T) {
			reg := registry.New(nil)
			noop := func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
				return mcp.TextResult("ok"), nil
			}
			require.NoError(t, reg.AddTool(&mcp.Tool{Name: "guarded", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop, nil))
			require.NoError(t, reg.AddTool(&mcp.Tool{Name: "export", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
					return nil, fmt.Errorf("export via %s: %w", secretDSN, errors.ErrUnsupported)
				}, nil))
			policy := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
				if tl.Name() == "guarded" && ac.Phase == middleware.PhaseCall {
					return errors.New("acl lookup in " + secretDSN + " said no")
				}
				return nil
			})
			var logs exampletest.SafeBuffer
			srv := mcp.NewServer(&mcp.ServerOptions{Tools: middleware.Standard(reg, &middleware.StandardOptions{Admission: policy}),
				ExposeErrorText: expose, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			ct, st := transport.NewPipe(nil)
			go func() { _ = srv.Run(context.Background(), st) }()
			c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: clientVersion, Logger: slog.New(slog.DiscardHandler)})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, c.Connect(ctx, ct))
			defer c.Close()

			_, err := c.CallTool(ctx, "guarded", nil)
			se := requireStructured(t, err)
			assert.Equal(t, mcp.ErrUnauthorized, se.Code)
			assert.NotEmpty(t, se.CorrelationID)
			_, err = c.CallTool(ctx, "export", nil)
			ue := requireStructured(t, err)
			assert.Equal(t, mcp.ErrNotImplemented, ue.Code)
			if expose {
				assert.Contains(t, se.Message, "hunter2")
				assert.Contains(t, ue.Message, "hunter2")
				return
			}
			assert.NotContains(t, se.Message, "hunter2")
			assert.Contains(t, se.Message, "admission policy")
			assert.Equal(t, errors.ErrUnsupported.Error(), ue.Message)
			assert.Contains(t, logs.String(), "said no", "the policy's text goes to the log")
			assert.Contains(t, logs.String(), "export via", "the handler's text goes to the log")
			assert.Contains(t, logs.String(), se.CorrelationID)
		})
	}
}
