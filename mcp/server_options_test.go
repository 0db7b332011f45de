package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// TestServerOptionsIsACopy changes everything a copy of the options refers
// to and shows that neither the server nor a later copy sees the change.
func TestServerOptionsIsACopy(t *testing.T) {
	echo := func(context.Context, *mcp.Request) (any, error) { return map[string]any{}, nil }
	srv := mcp.NewServer(&mcp.ServerOptions{
		Name:           "s",
		Icons:          []mcp.Icon{{Src: "https://example.com/i.png", Sizes: []string{"48x48"}}},
		Methods:        map[string]mcp.MethodHandler{"x/echo": echo},
		Notifications:  map[string]mcp.MethodHandler{"notifications/x": echo},
		InputMethods:   []string{"x/echo"},
		Middleware:     []mcp.Middleware{func(h mcp.MethodHandler) mcp.MethodHandler { return h }},
		SendMiddleware: []mcp.SendMiddleware{func(h mcp.SendHandler) mcp.SendHandler { return h }},
		Capabilities: &mcp.ServerCapabilities{
			Experimental: map[string]any{"x": map[string]any{}},
			Extensions:   map[string]any{"io.example/x": map[string]any{}},
			Tools:        &mcp.ListChangedCapability{ListChanged: true},
			Tasks:        &mcp.ServerTasksCapability{Requests: &mcp.TaskRequestsCapability{Tools: &mcp.ToolTaskRequests{}}},
		},
		StateKeys: []mcp.StateKey{{ID: "k1", Secret: make([]byte, mcp.MinStateKeyBytes)}},
		Tasks:     &mcp.TaskOptions{MaxTasks: 7},
	})
	want := srv.Options()

	got := srv.Options()
	got.Icons[0].Src = "changed"
	got.Icons[0].Sizes[0] = "changed"
	got.Methods["x/other"] = echo
	delete(got.Methods, "x/echo")
	got.Notifications["notifications/y"] = echo
	got.Middleware[0] = nil
	got.SendMiddleware[0] = nil
	got.InputMethods[0] = "x/changed"
	got.Capabilities.Experimental["y"] = true
	got.Capabilities.Extensions["io.example/y"] = true
	got.Capabilities.Tools.ListChanged = false
	got.Capabilities.Tasks.Requests.Tools.Call = &struct{}{}
	got.StateKeys[0].Secret[0] = 1
	got.StateKeys[0].ID = "changed"
	got.Tasks.MaxTasks = 1

	again := srv.Options()
	assert.Equal(t, want.Icons, again.Icons)
	assert.Len(t, again.Methods, 1)
	assert.Contains(t, again.Methods, "x/echo")
	assert.Len(t, again.Notifications, 1)
	require.Len(t, again.Middleware, 1)
	assert.NotNil(t, again.Middleware[0])
	require.Len(t, again.SendMiddleware, 1)
	assert.NotNil(t, again.SendMiddleware[0])
	assert.Equal(t, []string{"x/echo"}, again.InputMethods)
	assert.Equal(t, want.Capabilities, again.Capabilities)
	assert.True(t, again.Capabilities.Tools.ListChanged)
	assert.Nil(t, again.Capabilities.Tasks.Requests.Tools.Call)
	assert.Equal(t, want.StateKeys, again.StateKeys)
	assert.Equal(t, "k1", again.StateKeys[0].ID)
	assert.Equal(t, 7, again.Tasks.MaxTasks)

	// Each call hands out copies of its own.
	assert.NotSame(t, got.Capabilities, again.Capabilities)
	assert.NotSame(t, got.Tasks, again.Tasks)
}

// An InputMethods name that is not a custom method is an option error of
// Validate, which NewServer raises: the server fails at start-up.
func TestValidateRefusesUnknownInputMethod(t *testing.T) {
	o := &mcp.ServerOptions{InputMethods: []string{"acme/missing"}}
	err := o.Validate()
	var oe *mcp.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "InputMethods[0]", oe.Option)
	assert.Contains(t, oe.Problem, `"acme/missing" is not in Methods`)
	assert.PanicsWithError(t, err.Error(), func() { mcp.NewServer(o) })
}
