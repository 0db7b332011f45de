//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
)

// One Registry option serves tools, resources, prompts and completions:
// none of them answers "Method not found".
func TestServerOptionsRegistryServesEveryFeature(t *testing.T) {
	reg := fullRegistry(t)
	for _, tt := range []struct {
		name string
		opts *mcp.ServerOptions
	}{
		{"registry alone", &mcp.ServerOptions{Registry: reg}},
		{"with a middleware chain around it as Tools", &mcp.ServerOptions{Registry: reg, Tools: middleware.Standard(reg, nil)}},
		{"with itself in every field", &mcp.ServerOptions{Registry: reg, Tools: reg, Resources: reg, Prompts: reg, Completions: reg}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.opts.Validate())
			opts := mcptest.ServerOptions(tt.opts.Tools)
			opts.Registry, opts.Resources, opts.Prompts, opts.Completions = tt.opts.Registry, tt.opts.Resources, tt.opts.Prompts, tt.opts.Completions
			c, _ := connect(t, opts, nil)
			ctx := context.Background()
			tools, err := c.ListTools(ctx, "")
			require.NoError(t, err)
			require.Len(t, tools.Tools, 1)
			res, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
			require.NoError(t, err)
			assert.Equal(t, "hi", res.Content[0].Text)
			resources, err := c.ListResources(ctx, "")
			require.NoError(t, err)
			assert.Len(t, resources.Resources, 1)
			prompts, err := c.ListPrompts(ctx, "")
			require.NoError(t, err)
			assert.Len(t, prompts.Prompts, 1)
			comp, err := c.CompletePrompt(ctx, "p", "a", "al", nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"alpha"}, comp.Values)
		})
	}
}
