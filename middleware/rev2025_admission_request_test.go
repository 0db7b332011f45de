//go:build !keel_omit2025

package middleware_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

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
