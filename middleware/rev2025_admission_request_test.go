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

// Outside a request there is no request to answer for: a policy asked
// with a context that carries a Session but no request (the chain listed
// from ServerOptions.OnRootsListChanged) sees the Session, and no
// revision or client info (the Session's ProtocolVersion is the
// connection's kind, not a request's revision).
func TestAdmissionOutsideARequest(t *testing.T) {
	type seen struct {
		session bool
		version string
		client  mcp.Implementation
	}
	got := make(chan seen, 16)
	record := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
		if tl.Name() == "write" {
			got <- seen{ac.Session != nil, ac.ProtocolVersion, ac.ClientInfo}
		}
		return nil
	})
	ch := middleware.Standard(gatedTools(t), &middleware.StandardOptions{Admission: record})
	listed := make(chan error, 1)
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Tools: ch,
		OnRootsListChanged: func(ctx context.Context, _ *mcp.Session) {
			_, err := ch.ListTools(ctx)
			listed <- err
		}})
	asked := func(what string) seen {
		t.Helper()
		select {
		case s := <-got:
			return s
		case <-time.After(5 * time.Second):
			t.Fatalf("the policy was not asked %s", what)
			return seen{}
		}
	}
	c := serveOn(t, srv, "memory", &mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler), ProtocolVersion: mcp.Version20251125,
		Name: "legacy-client", Version: "1", Roots: []mcp.Root{{URI: "file:///a"}}})
	ctx := t.Context()
	_, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	assert.Equal(t, seen{true, mcp.Version20251125, mcp.Implementation{Name: "legacy-client", Version: "1"}}, asked("within the request"))

	require.NoError(t, c.SetRoots(ctx, []mcp.Root{{URI: "file:///b"}}))
	select {
	case err := <-listed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("OnRootsListChanged did not list")
	}
	assert.Equal(t, seen{session: true}, asked("outside a request"), "no request: no revision, no client info")
	assert.Empty(t, got)
}
