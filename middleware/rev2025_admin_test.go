//go:build !keel_omit2025

package middleware_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
)

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
	select {
	case m := <-changed:
		assert.Equal(t, "notifications/tools/list_changed", m)
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
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
