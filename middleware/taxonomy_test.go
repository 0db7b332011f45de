package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// The taxonomy: every code and whether a failure with it may be retried.
func TestErrorCodeRetryable(t *testing.T) {
	for _, tc := range []struct {
		code      mcp.ErrorCode
		wire      string
		retryable bool
	}{
		{mcp.ErrInvalidArgument, "INVALID_ARGUMENT", false},
		{mcp.ErrInvalidInput, "INVALID_INPUT", false},
		{mcp.ErrNotFound, "NOT_FOUND", false},
		{mcp.ErrPermissionDenied, "PERMISSION_DENIED", false},
		{mcp.ErrUnauthorized, "UNAUTHORIZED", false},
		{mcp.ErrNotImplemented, "NOT_IMPLEMENTED", false},
		{mcp.ErrNotInitialized, "NOT_INITIALIZED", false},
		{mcp.ErrRateLimited, "RATE_LIMITED", true},
		{mcp.ErrInternal, "INTERNAL", true},
		{mcp.ErrTimeout, "TIMEOUT", true},
		{mcp.ErrResourceExhausted, "RESOURCE_EXHAUSTED", true},
		{"SOMETHING_ELSE", "SOMETHING_ELSE", false},
	} {
		t.Run(tc.wire, func(t *testing.T) {
			assert.Equal(t, tc.wire, string(tc.code))
			assert.Equal(t, tc.retryable, tc.code.Retryable())
			se := mcp.NewToolError(tc.code, "m", nil)
			assert.Equal(t, tc.retryable, se.Retryable, "NewToolError sets Retryable from the code")
			text := mcp.ToolErrorResult(se).Content[0].Text
			assert.Equal(t, tc.retryable, strings.Contains(text, `"retryable":true`), text)
			assert.NotContains(t, text, `"retryable":false`, "false is the default: not sent")
			var back mcp.StructuredError
			require.NoError(t, jsonv2.Unmarshal([]byte(text), &back))
			assert.Equal(t, tc.retryable, back.Retryable)
		})
	}
}

// Each stage's errors carry the flag of their code, except the size
// limits, where the same call would fail again.
func TestStageErrorsRetryable(t *testing.T) {
	tt := newTestTools(t)
	full := NewLimiter(1)
	require.True(t, full.TryAcquire())
	defer full.Release()
	for _, tc := range []struct {
		name      string
		chain     *Chain
		tool      string
		args      string
		code      mcp.ErrorCode
		retryable bool
	}{
		{"panic", New(tt.reg, Recover()), "panic", `{}`, mcp.ErrInternal, true},
		{"payload", New(tt.reg, PayloadLimit(4)), "echo", `{"message":"long"}`, mcp.ErrResourceExhausted, false},
		{"slots", New(tt.reg, full.Middleware()), "echo", `{"message":"x"}`, mcp.ErrResourceExhausted, true},
		{"invalid", New(tt.reg, Validate()), "echo", `{"message":1}`, mcp.ErrInvalidArgument, false},
		{"timeout", New(tt.reg, Timeout(time.Millisecond)), "cooperate", `{}`, mcp.ErrTimeout, true},
		{"response", New(tt.reg, ResponseLimit(&ResponseLimitOptions{MaxBytes: 10})), "echo", `{"message":"a long message"}`, mcp.ErrResourceExhausted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tool == "cooperate" {
				go func() { <-tt.started }()
			}
			_, err := tc.chain.CallTool(context.Background(), call(tc.tool, tc.args, nil))
			se := structuredErr(t, err)
			assert.Equal(t, tc.code, se.Code)
			assert.Equal(t, tc.retryable, se.Retryable)
			assert.Equal(t, "corr-1", se.CorrelationID)
		})
	}
}

// A handler error matching errors.ErrUnsupported is NOT_IMPLEMENTED; one
// that already carries a code keeps it.
func TestDispatchUnsupportedIsNotImplemented(t *testing.T) {
	tt := newTestTools(t)
	for _, tc := range []struct {
		name string
		err  error
		code mcp.ErrorCode
	}{
		{"unsupported", fmt.Errorf("export to PDF: %w", errors.ErrUnsupported), mcp.ErrNotImplemented},
		{"coded", fmt.Errorf("%w (%w)", mcp.NewToolError(mcp.ErrInvalidInput, "bad", nil), errors.ErrUnsupported), mcp.ErrInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "fail_" + tc.name
			require.NoError(t, tt.reg.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) { return nil, tc.err }, nil))
			_, err := Standard(tt.reg, nil).CallTool(context.Background(), call(name, `{}`, nil))
			se := structuredErr(t, err)
			assert.Equal(t, tc.code, se.Code)
			assert.False(t, se.Retryable)
			if tc.code == mcp.ErrNotImplemented {
				assert.Equal(t, "unsupported operation", se.Message, "errors.ErrUnsupported's own text, not the text around it")
				assert.Equal(t, name, se.Details["tool"])
				assert.Equal(t, "run-1", se.RunID)
			}
		})
	}
	// A plain error stays as it is (the Server makes it INTERNAL).
	require.NoError(t, tt.reg.AddTool(&mcp.Tool{Name: "fail_plain", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			return nil, errors.New("disk full")
		}, nil))
	_, err := Standard(tt.reg, nil).CallTool(context.Background(), call("fail_plain", `{}`, nil))
	assert.EqualError(t, err, "disk full")
}
