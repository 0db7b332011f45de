package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

func fullRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg := registry.New(nil)
	type in struct {
		Text string `json:"text"`
	}
	require.NoError(t, registry.Register(reg, "echo", "echoes", func(_ context.Context, v in) (string, error) { return v.Text, nil }, nil))
	require.NoError(t, reg.AddTextResource(&mcp.Resource{URI: "test://r", Name: "r"}, "body"))
	require.NoError(t, reg.AddPrompt(&mcp.Prompt{Name: "p", Arguments: []mcp.PromptArgument{{Name: "a"}}},
		func(context.Context, map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		}, &registry.PromptOptions{Complete: map[string]registry.Completer{"a": registry.CompleteFrom("alpha", "beta")}}))
	return reg
}

// A feature field naming another catalog than Registry is an error at
// start-up, never a silent choice of one of them.
func TestServerOptionsRegistryConflicts(t *testing.T) {
	reg, other := fullRegistry(t), registry.New(nil)
	for _, tt := range []struct {
		name   string
		opts   mcp.ServerOptions
		option string
	}{
		{"another Tools", mcp.ServerOptions{Registry: reg, Tools: other}, "Tools"},
		{"a chain around another registry", mcp.ServerOptions{Registry: reg, Tools: middleware.Standard(other, nil)}, "Tools"},
		{"another Resources", mcp.ServerOptions{Registry: reg, Resources: other}, "Resources"},
		{"another Prompts", mcp.ServerOptions{Registry: reg, Prompts: other}, "Prompts"},
		{"another Completions", mcp.ServerOptions{Registry: reg, Completions: other}, "Completions"},
		{"a registry serving nothing", mcp.ServerOptions{Registry: "not a catalog"}, "Registry"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			var oe *mcp.OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tt.option, oe.Option)
			assert.Panics(t, func() { mcp.NewServer(&tt.opts) })
		})
	}
}
