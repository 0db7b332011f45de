package middleware_test

import (
	"context"
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
			tools, err := c.ListAllTools(ctx)
			require.NoError(t, err)
			names := make([]string, len(tools))
			for i, d := range tools {
				names[i] = d.Name
			}
			_, err = c.CallTool(ctx, "write", nil)
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
