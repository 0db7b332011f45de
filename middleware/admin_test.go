package middleware_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

const adminToken = "s3cret-token"

// env is a fake environment holding the admin token in ADMIN_TOKEN.
func env(key string) (string, bool) {
	if key == "ADMIN_TOKEN" {
		return adminToken, true
	}
	return "", false
}

func TestNewAdminErrors(t *testing.T) {
	reg := registry.New(nil)
	tests := []struct {
		name string
		opts *middleware.AdminOptions
		want string
	}{
		{"unknown policy", &middleware.AdminOptions{Policy: "allow_all"}, `unknown admin policy "allow_all"`},
		{"token without variable", &middleware.AdminOptions{Policy: middleware.AdminToken}, "TokenEnvVar"},
		{"nil maker", &middleware.AdminOptions{ToolTypes: map[string]middleware.ToolType{"x": nil}}, `tool type "x" has no maker`},
		{"no handler", &middleware.AdminOptions{ToolTypes: map[string]middleware.ToolType{"x": func(n, d string) (*mcp.Tool, registry.ToolHandler) {
			return &mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)}, nil
		}}}, "no handler"},
		{"schema not an object", &middleware.AdminOptions{ToolTypes: map[string]middleware.ToolType{"x": func(n, d string) (*mcp.Tool, registry.ToolHandler) {
			def, h := middleware.EchoToolType(n, d)
			def.InputSchema = json.RawMessage(`[1]`)
			return def, h
		}}}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := middleware.NewAdmin(reg, tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := middleware.NewAdmin(nil, nil)
	assert.Error(t, err)
	a, err := middleware.NewAdmin(reg, nil)
	require.NoError(t, err)
	assert.False(t, a.Enabled(), "both switches default to off")
	assert.Empty(t, a.Tools())
}

var adminNames = []string{middleware.AdminRegisterToolName, middleware.AdminUnregisterToolName}

func TestAdminTokenInMeta(t *testing.T) {
	ctx := context.Background()
	reg := gatedTools(t)
	a, err := middleware.NewAdmin(reg, &middleware.AdminOptions{AdminRegistrationEnabled: true, DynamicRegistrationEnabled: true,
		Policy: middleware.AdminToken, TokenEnvVar: "ADMIN_TOKEN", LookupEnv: env})
	require.NoError(t, err)
	ch := middleware.Standard(reg, &middleware.StandardOptions{Admin: a})
	assert.Equal(t, allGated, listedNames(t, ch, ctx), "without a bearer token the tools are not listed")

	args := `{"name":"echo2","description":"Echoes.","toolType":"echo"}`
	run := func(meta mcp.Meta) error {
		_, err := ch.CallTool(ctx, &mcp.ToolCall{Name: middleware.AdminRegisterToolName, Arguments: json.RawMessage(args), Meta: meta,
			CorrelationID: "c", RunID: "r", Logger: slog.New(slog.DiscardHandler)})
		return err
	}
	for _, tt := range []struct {
		meta   mcp.Meta
		reason string
	}{{nil, "token_missing"}, {mcp.Meta{middleware.MetaAdminToken: "guess"}, "token_invalid"}, {mcp.Meta{middleware.MetaAdminToken: 42.0}, "token_missing"}} {
		se := requireStructured(t, run(tt.meta))
		assert.Equal(t, mcp.ErrUnauthorized, se.Code)
		assert.Equal(t, tt.reason, se.Details["reason"])
	}
	require.NoError(t, run(mcp.Meta{middleware.MetaAdminToken: adminToken}))
	_, ok := reg.Lookup("echo2")
	assert.True(t, ok)
}

// registerArgs calls admin/registerTool (authorized: local_stdio_only on a
// stdio session) and returns its outcome.
func adminClient(t *testing.T, reg *registry.Registry, opts *middleware.AdminOptions, copts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	o := middleware.AdminOptions{Policy: middleware.AdminLocalStdioOnly}
	if opts != nil {
		o = *opts
	}
	o.AdminRegistrationEnabled, o.DynamicRegistrationEnabled = true, true
	a, err := middleware.NewAdmin(reg, &o)
	require.NoError(t, err)
	srv := mcp.NewServer(&mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler),
		Tools: middleware.Standard(reg, &middleware.StandardOptions{Admin: a})})
	return serveOn(t, srv, "stdio", copts)
}

// Admin tools go through the same gates as every other tool: READONLY hides
// them (they change things) even from authorized sessions, and
// unregisterTool is destructive, so the trust gate applies.
func TestAdminToolsUnderOtherPolicies(t *testing.T) {
	ctx := context.Background()
	reg := gatedTools(t)
	a, err := middleware.NewAdmin(reg, &middleware.AdminOptions{AdminRegistrationEnabled: true, DynamicRegistrationEnabled: true,
		Policy: middleware.AdminToken, TokenEnvVar: "ADMIN_TOKEN", LookupEnv: env,
		BearerToken: func(context.Context) string { return adminToken }})
	require.NoError(t, err)

	ch := middleware.Standard(reg, &middleware.StandardOptions{Admin: a, Admission: middleware.ModePolicy(middleware.ModeReadOnly)})
	assert.Equal(t, []string{"health", "read", "server_ping"}, listedNames(t, ch, ctx))
	_, err = callAt(ctx, ch, middleware.AdminRegisterToolName, nil)
	assert.True(t, isUnknownTool(err, middleware.AdminRegisterToolName), "%v", err)

	g := middleware.NewTrustGateway(middleware.TrustUntrusted)
	reg = gatedTools(t)
	a, err = middleware.NewAdmin(reg, &middleware.AdminOptions{AdminRegistrationEnabled: true, DynamicRegistrationEnabled: true,
		Policy: middleware.AdminToken, TokenEnvVar: "ADMIN_TOKEN", LookupEnv: env,
		BearerToken: func(context.Context) string { return adminToken }})
	require.NoError(t, err)
	ch = middleware.Standard(reg, &middleware.StandardOptions{Admin: a, Admission: g.Policy()})
	assert.Equal(t, slices.Sorted(slices.Values(append(slices.Clone(allGated), adminNames...))), listedNames(t, ch, ctx))
	_, err = ch.CallTool(ctx, &mcp.ToolCall{Name: middleware.AdminRegisterToolName, Logger: slog.New(slog.DiscardHandler),
		Arguments: json.RawMessage(`{"name":"e","description":"","toolType":"echo"}`)})
	require.NoError(t, err, "registerTool is not destructive")
	_, err = ch.CallTool(ctx, &mcp.ToolCall{Name: middleware.AdminUnregisterToolName, Logger: slog.New(slog.DiscardHandler),
		Arguments: json.RawMessage(`{"name":"e"}`)})
	se := requireStructured(t, err)
	assert.Equal(t, "untrusted", se.Details["reason"], "unregisterTool is destructive")
	g.Set(middleware.TrustTrusted)
	_, err = ch.CallTool(ctx, &mcp.ToolCall{Name: middleware.AdminUnregisterToolName, Logger: slog.New(slog.DiscardHandler),
		Arguments: json.RawMessage(`{"name":"e"}`)})
	require.NoError(t, err)
}

// serveStream runs srv on the server transport st and returns a Client
// connected through ct; both end with the test.
func serveStream(t *testing.T, srv *mcp.Server, st, ct transport.Transport) *mcp.Client {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	c := mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: clientVersion, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, ct))
	t.Cleanup(func() {
		c.Close()
		st.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server Run did not return")
		}
	})
	return c
}

// stdioPipes returns a server transport of the real stdio kind (NewStdio,
// built while os.Stdin and os.Stdout are the ends of two pipes, which are
// restored at once) and the client transport over the other ends.
func stdioPipes(t *testing.T) (server, client transport.Transport) {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	stdin, stdout := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = inR, outW
	server = transport.NewStdio(nil)
	os.Stdin, os.Stdout = stdin, stdout
	client = transport.NewStdioStreams(outR, inW, nil)
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}
