package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

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

// acmeCaps is a struct value in ServerOptions.Capabilities: the server
// keeps what it encoded to at NewServer.
type acmeCaps struct {
	Zone  string         `json:"zone"`
	Rules map[string]int `json:"rules"`
}

// TestServerCapabilitiesAreCopiedDeep changes the nested values of
// Capabilities.Experimental and Extensions, in the options passed to
// NewServer after the call and in a copy Options returned, and shows that
// what the server declares on the wire (server/discover, whose
// capabilities carry both) does not change.
func TestServerCapabilitiesAreCopiedDeep(t *testing.T) {
	nested := map[string]any{"a": 1.0, "list": []any{"x", map[string]any{"b": true}}}
	acme := &acmeCaps{Zone: "eu", Rules: map[string]int{"r": 1}}
	opts := &mcp.ServerOptions{Name: "s", Capabilities: &mcp.ServerCapabilities{
		Experimental: map[string]any{"x": nested, "acme": acme, "raw": json.RawMessage(`{"c":1}`)},
		Extensions:   map[string]any{"io.example/x": map[string]any{"n": []any{1.0, 2.0}}},
	}}
	srv := mcp.NewServer(opts)
	c := connectRaw(t, srv, false, true)
	discover := func() string {
		t.Helper()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b, err := c.tr.Read(ctx)
		require.NoError(t, err)
		return string(b)
	}
	want := discover()
	require.Contains(t, want, `"acme":{"zone":"eu","rules":{"r":1}}`)
	require.Contains(t, want, `"io.example/x":{"n":[1,2]}`)

	// The options passed to NewServer, changed after the call.
	nested["a"] = 2.0
	nested["list"].([]any)[1].(map[string]any)["b"] = false
	acme.Zone, acme.Rules["r"] = "us", 2
	copy(opts.Capabilities.Experimental["raw"].(json.RawMessage), `{"c":2}`)
	opts.Capabilities.Extensions["io.example/x"].(map[string]any)["n"].([]any)[0] = 9.0
	assert.Equal(t, want, discover(), "changing the options after NewServer changed the wire")

	// A copy Options returned, changed all the way down.
	got := srv.Options()
	got.Capabilities.Experimental["x"].(map[string]any)["a"] = 3.0
	got.Capabilities.Experimental["x"].(map[string]any)["list"].([]any)[0] = "changed"
	got.Capabilities.Experimental["x"].(map[string]any)["list"].([]any)[1].(map[string]any)["b"] = "changed"
	got.Capabilities.Extensions["io.example/x"].(map[string]any)["n"].([]any)[1] = 9.0
	raw := got.Capabilities.Experimental["raw"].(json.RawMessage)
	copy(raw, `{"c":3}`)
	assert.Equal(t, want, discover(), "changing a copy from Options changed the wire")
}

// A capability value that does not encode as JSON is a configuration
// error: NewServer panics with a message naming the member.
func TestServerCapabilitiesMustEncode(t *testing.T) {
	for _, field := range []string{"Experimental", "Extensions"} {
		caps := &mcp.ServerCapabilities{}
		bad := map[string]any{"x": []any{map[string]any{"ch": make(chan int)}}}
		if field == "Experimental" {
			caps.Experimental = bad
		} else {
			caps.Extensions = bad
		}
		var got any
		func() {
			defer func() { got = recover() }()
			mcp.NewServer(&mcp.ServerOptions{Capabilities: caps})
		}()
		require.NotNil(t, got, field)
		assert.Contains(t, fmt.Sprint(got), `mcp: ServerOptions.Capabilities.`+field+`["x"][0]["ch"] does not encode as JSON`)
	}
}
