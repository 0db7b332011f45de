package middleware_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

// Admission reaches the session: a policy keyed on the transport kind hides
// a tool over one transport and not the other, at list and at call time.
func TestAdmissionSeesTheSession(t *testing.T) {
	ctx := context.Background()
	onlyStdio := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
		if tl.Name() == "write" && ac.TransportKind() != "stdio" {
			return middleware.Hidden(tl, "stdio only")
		}
		return nil
	})
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
		Tools: middleware.Standard(gatedTools(t), &middleware.StandardOptions{Admission: onlyStdio})})

	for _, kind := range []string{"stdio", "memory"} {
		t.Run(kind, func(t *testing.T) {
			c := serveOn(t, srv, kind, nil)
			names := toolNames(ctx, c)
			_, err := c.CallTool(ctx, "write", nil)
			if kind == "stdio" {
				assert.Contains(t, names, "write")
				assert.NoError(t, err)
				return
			}
			assert.NotContains(t, names, "write")
			var e *mcp.Error
			require.ErrorAs(t, err, &e)
			assert.EqualValues(t, mcp.CodeInvalidParams, e.Code, "hidden: looks unknown")
		})
	}
}

// A tool admission hides over one transport cannot run as a task there
// either.
func TestAdmissionHidesTasks(t *testing.T) {
	ctx := context.Background()
	reg := registry.New(nil)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "write_task", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			mcp.StartTask(ctx) // a task (at 2026-07-28, where the server decides)
			return mcp.TextResult("ok"), nil
		},
		&registry.ToolOptions{TaskSupport: mcp.TaskOptional}))
	hideTask := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
		if tl.Name() == "write_task" && ac.TransportKind() != "stdio" {
			return middleware.Hidden(tl, "stdio only")
		}
		return nil
	})
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tasks: &mcp.TaskOptions{},
		Tools: middleware.Standard(reg, &middleware.StandardOptions{Admission: hideTask})})

	for _, kind := range []string{"stdio", "memory"} {
		t.Run(kind, func(t *testing.T) {
			c := serveOn(t, srv, kind, nil)
			names := toolNames(ctx, c)
			id, terr := startTask(ctx, c, "write_task")
			if kind == "stdio" {
				assert.Contains(t, names, "write_task")
				require.NoError(t, terr)
				res, err := taskResult(ctx, c, id)
				require.NoError(t, err)
				assert.Equal(t, "ok", res.Content[0].Text)
				return
			}
			assert.NotContains(t, names, "write_task")
			var e *mcp.Error
			require.ErrorAs(t, terr, &e)
			assert.EqualValues(t, mcp.CodeInvalidParams, e.Code, "hidden: looks unknown, as a task too")
		})
	}
}
