package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// The admin tools exist only when both switches are on, and are visible and
// callable only for the sessions the admin policy authorizes; list time and
// call time agree.
func TestAdminVisibilityMatrix(t *testing.T) {
	ctx := context.Background()
	type policy struct {
		name   string
		opts   middleware.AdminOptions
		authOK func(kind string) bool
	}
	bearer := func(tok string) func(context.Context) string { return func(context.Context) string { return tok } }
	policies := []policy{
		{"deny_all", middleware.AdminOptions{Policy: middleware.AdminDenyAll}, func(string) bool { return false }},
		{"default", middleware.AdminOptions{}, func(string) bool { return false }},
		{"local_stdio_only", middleware.AdminOptions{Policy: middleware.AdminLocalStdioOnly}, func(k string) bool { return k == "stdio" }},
		{"token good bearer", middleware.AdminOptions{Policy: middleware.AdminToken, TokenEnvVar: "ADMIN_TOKEN", LookupEnv: env, BearerToken: bearer(adminToken)},
			func(string) bool { return true }},
		{"token bad bearer", middleware.AdminOptions{Policy: middleware.AdminToken, TokenEnvVar: "ADMIN_TOKEN", LookupEnv: env, BearerToken: bearer("guess")},
			func(string) bool { return false }},
		{"token none", middleware.AdminOptions{Policy: middleware.AdminToken, TokenEnvVar: "ADMIN_TOKEN", LookupEnv: env},
			func(string) bool { return false }},
		{"token unset variable", middleware.AdminOptions{Policy: middleware.AdminToken, TokenEnvVar: "UNSET", LookupEnv: env, BearerToken: bearer(adminToken)},
			func(string) bool { return false }},
	}
	for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		for _, p := range policies {
			for _, kind := range []string{"stdio", "http"} {
				name := fmt.Sprintf("admin=%v,dynamic=%v/%s/%s", flags[0], flags[1], p.name, kind)
				t.Run(name, func(t *testing.T) {
					reg := gatedTools(t)
					o := p.opts
					o.AdminRegistrationEnabled, o.DynamicRegistrationEnabled = flags[0], flags[1]
					a, err := middleware.NewAdmin(reg, &o)
					require.NoError(t, err)
					exists := flags[0] && flags[1]
					assert.Equal(t, exists, a.Enabled())
					srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
						Tools: middleware.Standard(reg, &middleware.StandardOptions{Admin: a})})
					c := serveOn(t, srv, kind, nil)

					tools, err := c.ListAllTools(ctx)
					require.NoError(t, err)
					var listed []string
					for _, d := range tools {
						if slices.Contains(adminNames, d.Name) {
							listed = append(listed, d.Name)
						}
					}
					authorized := exists && p.authOK(kind)
					if authorized {
						assert.Equal(t, adminNames, listed)
					} else {
						assert.Empty(t, listed)
					}

					res, err := c.CallTool(ctx, middleware.AdminRegisterToolName,
						map[string]any{"name": "echo2", "description": "Echoes.", "toolType": "echo"})
					switch {
					case !exists:
						var e *mcp.Error
						require.ErrorAs(t, err, &e, "without both switches the tools do not exist")
						assert.EqualValues(t, mcp.CodeInvalidParams, e.Code)
					case !authorized:
						se := requireStructured(t, err)
						assert.Equal(t, mcp.ErrUnauthorized, se.Code)
						assert.True(t, res.IsError)
						_, registered := reg.Lookup("echo2")
						assert.False(t, registered)
					default:
						require.NoError(t, err)
						_, registered := reg.Lookup("echo2")
						assert.True(t, registered)
					}
				})
			}
		}
	}
}

// The agentProxy tool type comes from package agents (which middleware does
// not import): wire agents.AgentProxyTool into AdminOptions.ToolTypes.
func TestAdminAgentProxyToolType(t *testing.T) {
	ctx := context.Background()
	coord := agents.NewCoordinator(nil)
	require.NoError(t, coord.Register("greeter", func(_ context.Context, msg agents.Message, _ *agents.AgentContext) (any, error) {
		var name string
		if err := msg.DecodePayload(&name); err != nil {
			return nil, err
		}
		return "hello, " + name, nil
	}, nil))
	types := middleware.DefaultToolTypes()
	types[agents.AgentProxyToolType] = func(name, description string) (*mcp.Tool, registry.ToolHandler) {
		return agents.AgentProxyTool(coord)
	}
	reg := registry.New(nil)
	c := adminClient(t, reg, &middleware.AdminOptions{Policy: middleware.AdminLocalStdioOnly, ToolTypes: types}, nil)

	_, err := c.CallTool(ctx, middleware.AdminRegisterToolName, map[string]any{"name": "ask_greeter", "description": "Asks the greeter.",
		"toolType": "agentProxy", "inputSchema": jsontext.Value(agents.AgentProxySchema)})
	require.NoError(t, err)
	res, err := c.CallTool(ctx, "ask_greeter", map[string]any{"targetAgentId": "greeter", "message": map[string]any{"type": "greet", "payload": "Ann"}})
	require.NoError(t, err)
	out, err := mcp.DecodeStructured[agents.AgentProxyResult](res)
	require.NoError(t, err)
	assert.Equal(t, "hello, Ann", out.Response)

	_, err = c.CallTool(ctx, middleware.AdminRegisterToolName, map[string]any{"name": "p2", "description": "",
		"toolType": "agentProxy", "inputSchema": jsontext.Value(middleware.EchoSchema)})
	se := requireStructured(t, err)
	assert.Equal(t, "schema_mismatch", se.Details["reason"])
	assert.Equal(t, agents.AgentProxySchema, se.Details["canonical"])
	require.NoError(t, coord.Shutdown(ctx, agents.ShutdownDrain))
	assert.True(t, errors.Is(err, &mcp.StructuredError{Code: mcp.ErrInvalidInput}))
}

// The local_stdio_only admin policy admits the client on the process's own
// stdio and nobody reaching the same newline-delimited protocol through a
// socket: over net.Pipe and over a Unix socket the admin tools are not
// listed and a call gets UNAUTHORIZED; over the real stdio kind it runs.
// Authorize gates a tool of the registry (a lifecycle tool) the same way.
func TestAdminLocalStdioOnlyNotThroughSockets(t *testing.T) {
	ctx := context.Background()
	unixPair := func(t *testing.T) (transport.Transport, transport.Transport) {
		dir, err := os.MkdirTemp("", "keel") // short: Unix socket paths are limited to ~100 bytes
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		ln, err := net.Listen("unix", filepath.Join(dir, "s"))
		require.NoError(t, err)
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() { c, _ := ln.Accept(); accepted <- c }()
		cc, err := net.Dial("unix", ln.Addr().String())
		require.NoError(t, err)
		sc := <-accepted
		require.NotNil(t, sc)
		return transport.NewStdioStreams(sc, sc, nil), transport.NewStdioStreams(cc, cc, nil)
	}
	netPipe := func(t *testing.T) (transport.Transport, transport.Transport) {
		sc, cc := net.Pipe()
		return transport.NewStdioStreams(sc, sc, nil), transport.NewStdioStreams(cc, cc, nil)
	}
	tests := []struct {
		name     string
		pair     func(t *testing.T) (server, client transport.Transport)
		kind     string
		admitted bool
	}{
		{"net.Pipe", netPipe, transport.KindStream, false},
		{"unix socket", unixPair, transport.KindStream, false},
		{"process stdio", stdioPipes, transport.KindStdio, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := registry.New(nil)
			require.NoError(t, reg.AddTool(&mcp.Tool{Name: "shutdown", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
					return mcp.TextResult("stopping"), nil
				}, &registry.ToolOptions{Module: "lifecycle", Destructive: true}))
			a, err := middleware.NewAdmin(reg, &middleware.AdminOptions{Policy: middleware.AdminLocalStdioOnly,
				AdminRegistrationEnabled: true, DynamicRegistrationEnabled: true})
			require.NoError(t, err)
			lifecycle := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
				if middleware.ToolModule(tl) != "lifecycle" {
					return nil
				}
				return a.Authorize(ctx, tl, ac)
			})
			srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
				Tools: middleware.Standard(reg, &middleware.StandardOptions{Admin: a, Admission: lifecycle})})
			st, ct := tt.pair(t)
			require.Equal(t, tt.kind, st.Kind())
			c := serveStream(t, srv, st, ct)

			tools, err := c.ListAllTools(ctx)
			require.NoError(t, err)
			var listed []string
			for _, d := range tools {
				listed = append(listed, d.Name)
			}
			for _, name := range []string{middleware.AdminRegisterToolName, "shutdown"} {
				assert.Equal(t, tt.admitted, slices.Contains(listed, name), "%s listed", name)
			}

			_, err = c.CallTool(ctx, "shutdown", map[string]any{})
			res, rerr := c.CallTool(ctx, middleware.AdminRegisterToolName,
				map[string]any{"name": "echo2", "description": "Echoes.", "toolType": "echo"})
			_, registered := reg.Lookup("echo2")
			if tt.admitted {
				require.NoError(t, err)
				require.NoError(t, rerr)
				assert.True(t, registered)
				return
			}
			for _, err := range []error{err, rerr} {
				se := requireStructured(t, err)
				assert.Equal(t, mcp.ErrUnauthorized, se.Code)
				assert.Equal(t, "transport", se.Details["reason"])
				assert.Equal(t, transport.KindStream, se.Details["transport"])
			}
			assert.True(t, res.IsError)
			assert.False(t, registered)
		})
	}
}

// A lifecycle tool of one's own, gated by the admin policy: with
// local_stdio_only, a client that is not on the process's own stdio (here,
// in memory) may not call it.
func ExampleAdmin_Authorize() {
	type noInput struct{}
	reg := registry.New(nil)
	registry.MustRegister(reg, "shutdown", "Stops the server.",
		func(context.Context, noInput) (string, error) { return "stopping", nil },
		&registry.ToolOptions{Module: "lifecycle", Destructive: true})
	admin, err := middleware.NewAdmin(reg, &middleware.AdminOptions{Policy: middleware.AdminLocalStdioOnly})
	if err != nil {
		panic(err)
	}
	gate := middleware.AdmissionFunc(func(ctx context.Context, t *registry.Tool, ac middleware.AdmissionContext) error {
		if middleware.ToolModule(t) != "lifecycle" {
			return nil
		}
		return admin.Authorize(ctx, t, ac)
	})
	quiet := slog.New(slog.DiscardHandler)
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: quiet,
		Tools: middleware.Standard(reg, &middleware.StandardOptions{Admission: gate})})

	ctx := context.Background()
	clientEnd, serverEnd := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, serverEnd) }()
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: clientVersion, Logger: quiet})
	if err := c.Connect(ctx, clientEnd); err != nil {
		panic(err)
	}
	_, err = c.CallTool(ctx, "shutdown", nil)
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		fmt.Println(se.Code, se.Details["reason"], se.Details["transport"])
	}
	c.Close()
	<-done
	// Output: UNAUTHORIZED transport memory
}

// admin/registerTool and admin/unregisterTool: what they accept, what they
// refuse and why, and that a registered tool is listed and callable.
func TestAdminRegisterRules(t *testing.T) {
	ctx := context.Background()
	changed := make(chan string, 16)
	reg := gatedTools(t)
	c := adminClient(t, reg, nil, &mcp.ClientOptions{ProtocolVersion: clientVersion, Logger: slog.New(slog.DiscardHandler),
		OnListChanged: func(method string) { changed <- method }})
	register := func(args string) (*mcp.CallToolResult, error) {
		return c.CallTool(ctx, middleware.AdminRegisterToolName, jsontext.Value(args))
	}
	invalid := func(t *testing.T, err error, reason string) {
		t.Helper()
		se := requireStructured(t, err)
		assert.Equal(t, mcp.ErrInvalidInput, se.Code, "the arguments passed the schema; the tool refuses them")
		assert.Equal(t, reason, se.Details["reason"])
	}

	// The canonical schema, even with other whitespace, matches.
	res, err := register(`{"name":"say","description":"Says it.","toolType":"echo",
		"inputSchema": { "type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"] }}`)
	require.NoError(t, err)
	out, err := mcp.DecodeStructured[middleware.RegisterToolResult](res)
	require.NoError(t, err)
	assert.Equal(t, middleware.RegisterToolResult{Name: "say", ToolType: "echo", Registered: true}, out)
	if sessionListChanged { // a 2026-07-28 client hears of it on a subscriptions/listen stream only
		select {
		case m := <-changed:
			assert.Equal(t, "notifications/tools/list_changed", m)
		case <-time.After(5 * time.Second):
			t.Fatal("no notifications/tools/list_changed")
		}
	}
	tools, err := c.ListAllTools(ctx)
	require.NoError(t, err)
	i := slices.IndexFunc(tools, func(d *mcp.Tool) bool { return d.Name == "say" })
	require.GreaterOrEqual(t, i, 0)
	assert.JSONEq(t, middleware.EchoSchema, string(tools[i].InputSchema))
	assert.Equal(t, "Says it.", tools[i].Description)
	assert.Equal(t, middleware.DynamicModule, tools[i].Meta[registry.MetaModule])
	res, err = c.CallTool(ctx, "say", map[string]string{"message": "hello"})
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Content[0].Text)
	_, err = c.CallTool(ctx, "say", map[string]int{"message": 1})
	invalidArg := requireStructured(t, err)
	assert.Equal(t, mcp.ErrInvalidArgument, invalidArg.Code, "the canonical schema validates the new tool's arguments")

	// Byte-match: same schema, other member order → refused.
	_, err = register(`{"name":"say2","description":"","toolType":"echo","inputSchema":{"properties":{"message":{"type":"string"}},"type":"object","required":["message"]}}`)
	invalid(t, err, "schema_mismatch")
	_, err = register(`{"name":"say2","description":"","toolType":"echo","inputSchema":{"type":"object"}}`)
	invalid(t, err, "schema_mismatch")
	_, err = register(`{"name":"h","description":"","toolType":"health","inputSchema":` + middleware.EchoSchema + `}`)
	invalid(t, err, "schema_mismatch")
	_, err = register(`{"name":"x","description":"","toolType":"shell"}`)
	invalid(t, err, "unknown_tool_type")
	_, err = register(`{"name":"x","description":"","toolType":"agentProxy"}`)
	notImpl := requireStructured(t, err)
	assert.Equal(t, mcp.ErrNotImplemented, notImpl.Code, "a known tool type this server did not add")
	assert.Equal(t, "tool_type_not_configured", notImpl.Details["reason"])
	assert.False(t, notImpl.Retryable)
	_, err = register(`{"name":"say","description":"","toolType":"echo"}`)
	invalid(t, err, "duplicate_name")
	_, err = register(`{"name":"read","description":"","toolType":"echo"}`)
	invalid(t, err, "duplicate_name")
	_, err = register(`{"name":"bad name","description":"","toolType":"echo"}`)
	invalid(t, err, "invalid_name")
	_, err = register(`{"name":"admin/registerTool","description":"","toolType":"echo"}`)
	invalid(t, err, "reserved_name")
	_, err = register(`{"name":"x","toolType":"echo"}`)
	assert.Equal(t, mcp.ErrInvalidArgument, requireStructured(t, err).Code, "description is required")

	// health, with its canonical schema.
	_, err = register(`{"name":"status","description":"Health.","toolType":"health","inputSchema":` + middleware.HealthSchema + `}`)
	require.NoError(t, err)
	res, err = c.CallTool(ctx, "status", nil)
	require.NoError(t, err)
	rep, err := mcp.DecodeStructured[middleware.HealthReport](res)
	require.NoError(t, err)
	assert.Equal(t, "keel", rep.Server.Name)

	// unregister: only tools registered here.
	unregister := func(name string) (*mcp.CallToolResult, error) {
		return c.CallTool(ctx, middleware.AdminUnregisterToolName, map[string]string{"name": name})
	}
	_, err = unregister("read")
	invalid(t, err, "not_dynamic")
	_, err = unregister("nothing")
	assert.Equal(t, mcp.ErrNotFound, requireStructured(t, err).Code)
	res, err = unregister("say")
	require.NoError(t, err)
	uo, err := mcp.DecodeStructured[middleware.UnregisterToolResult](res)
	require.NoError(t, err)
	assert.Equal(t, middleware.UnregisterToolResult{Name: "say", Unregistered: true}, uo)
	_, err = c.CallTool(ctx, "say", map[string]string{"message": "hello"})
	var e *mcp.Error
	require.ErrorAs(t, err, &e)
	assert.EqualValues(t, mcp.CodeInvalidParams, e.Code, "gone")
	_, err = unregister("say")
	assert.Equal(t, mcp.ErrNotFound, requireStructured(t, err).Code)
}
