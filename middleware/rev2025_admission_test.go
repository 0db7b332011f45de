//go:build !keel_omit2025

package middleware_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

// Admission reaches the session: a policy keyed on the transport kind hides
// tools over one transport and not the other, at list and at call time; a
// hidden tool cannot run as a task either.
func TestAdmissionSeesTheSession(t *testing.T) {
	ctx := context.Background()
	onlyStdio := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
		if tl.Name() == "write" && ac.TransportKind() != "stdio" {
			return middleware.Hidden(tl, "stdio only")
		}
		return nil
	})
	reg := gatedTools(t)
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "write_task", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
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
		Tools: middleware.Standard(reg, &middleware.StandardOptions{Admission: middleware.AllOf(onlyStdio, hideTask)})})

	for _, kind := range []string{"stdio", "memory"} {
		t.Run(kind, func(t *testing.T) {
			c := serveOn(t, srv, kind, nil)
			tools, err := c.ListAllTools(ctx)
			require.NoError(t, err)
			names := make([]string, len(tools))
			for i, d := range tools {
				names[i] = d.Name
			}
			_, err = c.CallTool(ctx, "write", nil)
			created, terr := c.CallToolAsTask(ctx, "write_task", nil, 0)
			if kind == "stdio" {
				assert.Contains(t, names, "write")
				assert.NoError(t, err)
				require.NoError(t, terr)
				res, err := c.TaskResult(ctx, created.Task.TaskID)
				require.NoError(t, err)
				assert.Equal(t, "ok", res.Content[0].Text)
				return
			}
			assert.NotContains(t, names, "write")
			assert.NotContains(t, names, "write_task")
			var e *mcp.Error
			require.ErrorAs(t, err, &e)
			assert.EqualValues(t, mcp.CodeInvalidParams, e.Code, "hidden: looks unknown")
			require.ErrorAs(t, terr, &e)
			assert.EqualValues(t, mcp.CodeInvalidParams, e.Code, "hidden: looks unknown, as a task too")
		})
	}
}

// A task-augmented call gets no default response deadline: its task's ttl
// bounds it.
func TestTimeoutSparesTasks(t *testing.T) {
	ctx := context.Background()
	reg := registry.New(nil)
	release := make(chan struct{})
	require.NoError(t, reg.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
			select {
			case <-release:
				return mcp.TextResult("finished"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}, &registry.ToolOptions{TaskSupport: mcp.TaskOptional}))
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tasks: &mcp.TaskOptions{},
		Tools: middleware.Standard(reg, &middleware.StandardOptions{DefaultTimeout: 10 * time.Millisecond})})
	c := serveOn(t, srv, "memory", nil)

	_, err := c.CallTool(ctx, "slow", nil)
	se := requireStructured(t, err)
	assert.Equal(t, mcp.ErrTimeout, se.Code, "a plain call times out")

	created, err := c.CallToolAsTask(ctx, "slow", nil, 0)
	require.NoError(t, err)
	time.Sleep(30 * time.Millisecond) // past the default deadline
	got, err := c.GetTask(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, mcp.TaskStatusWorking, got.Status)
	close(release)
	res, err := c.TaskResult(ctx, created.Task.TaskID)
	require.NoError(t, err)
	assert.Equal(t, "finished", res.Content[0].Text)
}

// A policy sees the request's own revision and client info: a 2026-07-28
// request's (from its _meta), not its connection's, at list and at call
// time; a 2025 session's from its initialize.
func TestAdmissionSeesTheRequest(t *testing.T) {
	type seen struct {
		phase   middleware.AdmissionPhase
		version string
		client  string
	}
	got := make(chan seen, 16)
	record := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
		if tl.Name() == "write" {
			got <- seen{ac.Phase, ac.ProtocolVersion, ac.ClientInfo.Name}
		}
		return nil
	})
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
		Tools: middleware.Standard(gatedTools(t), &middleware.StandardOptions{Admission: record})})
	for _, tc := range []struct{ version, client string }{
		{mcp.Version20260728, "modern-client"},
		{mcp.Version20251125, "legacy-client"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			ctx := t.Context()
			c := serveOn(t, srv, "memory", &mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler), ProtocolVersion: tc.version, Name: tc.client, Version: "1"})
			_, err := c.ListAllTools(ctx)
			require.NoError(t, err)
			_, err = c.CallTool(ctx, "write", nil)
			require.NoError(t, err)
			want := []seen{{middleware.PhaseList, tc.version, tc.client}, {middleware.PhaseCall, tc.version, tc.client}}
			for _, w := range want {
				select {
				case s := <-got:
					assert.Equal(t, w, s)
				case <-time.After(5 * time.Second):
					t.Fatal("the policy was not asked")
				}
			}
			assert.Empty(t, got)
		})
	}
}
