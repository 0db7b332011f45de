package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/middleware"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// gatedTools returns a registry holding one tool of each kind a policy
// looks at.
func gatedTools(t testing.TB) *registry.Registry {
	reg := registry.New(nil)
	add := func(name string, opts *registry.ToolOptions) {
		require.NoError(t, reg.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
				return mcp.TextResult(name + " ran"), nil
			}, opts))
	}
	add("read", &registry.ToolOptions{ReadOnly: true})
	add("write", nil)
	add("wipe", &registry.ToolOptions{Destructive: true})
	add("probe", &registry.ToolOptions{Module: "test"})
	add("probe_ro", &registry.ToolOptions{Module: "test", ReadOnly: true})
	require.NoError(t, middleware.RegisterPingTool(reg, nil))
	require.NoError(t, middleware.RegisterHealthTool(reg, nil))
	return reg
}

func listedNames(t testing.TB, src mcp.ToolSource, ctx context.Context) []string {
	t.Helper()
	defs, err := src.ListTools(ctx)
	require.NoError(t, err)
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

func callAt(ctx context.Context, src mcp.ToolSource, name string, meta mcp.Meta) (*mcp.CallToolResult, error) {
	return src.CallTool(ctx, &mcp.ToolCall{Name: name, Arguments: json.RawMessage(`{}`), Meta: meta,
		CorrelationID: "corr-1", RunID: "run-1", Logger: slog.New(slog.DiscardHandler)})
}

// isUnknownTool reports whether err is exactly what a call of an
// unregistered tool named name gets.
func isUnknownTool(err error, name string) bool {
	var e *mcp.Error
	if !errors.As(err, &e) {
		return false
	}
	want := registry.UnknownToolError(&mcp.ToolCall{Name: name, CorrelationID: "corr-1", RunID: "run-1"})
	return e.Code == want.Code && e.Message == want.Message && assert.ObjectsAreEqual(want.Data, e.Data)
}

var allGated = []string{"health", "probe", "probe_ro", "read", "server_ping", "wipe", "write"}

func TestModePolicy(t *testing.T) {
	tests := []struct {
		mode middleware.Mode
		want []string
	}{
		{middleware.ModeFull, []string{"health", "read", "server_ping", "wipe", "write"}},
		{middleware.ModeReadOnly, []string{"health", "read", "server_ping"}},
		{middleware.ModeTest, allGated},
		{middleware.ModeMinimal, []string{"health", "server_ping"}},
		{"BOGUS", nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			ch := middleware.Standard(gatedTools(t), &middleware.StandardOptions{Admission: middleware.ModePolicy(tt.mode)})
			ctx := context.Background()
			assert.Equal(t, tt.want, listedNames(t, ch, ctx))
			// Call time agrees with list time: listed tools run, the
			// others look unknown.
			for _, name := range allGated {
				res, err := callAt(ctx, ch, name, nil)
				if slices.Contains(tt.want, name) {
					require.NoError(t, err, name)
					assert.False(t, res.IsError, name)
				} else {
					assert.True(t, isUnknownTool(err, name), "%s: %v", name, err)
				}
			}
		})
	}
}

func TestModePolicyCustomCoreAndTestModule(t *testing.T) {
	ctx := context.Background()
	p := &middleware.ModeAdmission{Mode: middleware.ModeMinimal, Core: []string{"read"}}
	ch := middleware.New(gatedTools(t)).Admit(p)
	assert.Equal(t, []string{"read"}, listedNames(t, ch, ctx))
	p = &middleware.ModeAdmission{Mode: middleware.ModeFull, TestModule: "none"}
	ch = middleware.New(gatedTools(t)).Admit(p)
	assert.Equal(t, allGated, listedNames(t, ch, ctx), "no tool is in module none: FULL admits all")
}

func TestTrustPolicy(t *testing.T) {
	ctx := context.Background()
	g := middleware.NewTrustGateway(middleware.TrustUntrusted)
	ch := middleware.Standard(gatedTools(t), &middleware.StandardOptions{Admission: g.Policy()})
	assert.Equal(t, allGated, listedNames(t, ch, ctx), "destructive tools stay listed")

	_, err := callAt(ctx, ch, "wipe", nil)
	se := requireStructured(t, err)
	assert.Equal(t, mcp.ErrPermissionDenied, se.Code, "the trust state forbids it, whoever asks")
	assert.False(t, se.Retryable)
	assert.Equal(t, map[string]any{"tool": "wipe", "reason": "untrusted", "trustState": "UNTRUSTED", "required": "TRUSTED"}, se.Details)
	assert.Equal(t, "corr-1", se.CorrelationID)
	assert.Equal(t, "run-1", se.RunID)
	for _, name := range []string{"write", "read"} { // not marked destructive
		_, err := callAt(ctx, ch, name, nil)
		require.NoError(t, err)
	}

	g.Set(middleware.TrustTrusted)
	res, err := callAt(ctx, ch, "wipe", nil)
	require.NoError(t, err)
	assert.Equal(t, "wipe ran", res.Content[0].Text)
	g.Set(middleware.TrustUntrusted)
	_, err = callAt(ctx, ch, "wipe", nil)
	assert.Error(t, err)

	// A nil state function is always UNTRUSTED; a per-request state sees ctx.
	type key struct{}
	perRequest := middleware.TrustPolicy(func(ctx context.Context) middleware.TrustState {
		s, _ := ctx.Value(key{}).(middleware.TrustState)
		return s
	})
	ch = middleware.New(gatedTools(t)).Admit(perRequest)
	_, err = callAt(ctx, ch, "wipe", nil)
	assert.Error(t, err)
	_, err = callAt(context.WithValue(ctx, key{}, middleware.TrustTrusted), ch, "wipe", nil)
	assert.NoError(t, err)
	ch = middleware.New(gatedTools(t)).Admit(middleware.TrustPolicy(nil))
	_, err = callAt(ctx, ch, "wipe", nil)
	assert.Error(t, err)
}

func requireStructured(t testing.TB, err error) *mcp.StructuredError {
	t.Helper()
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	return se
}

func TestAllOfAndCustomPolicies(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("nope")
	tests := []struct {
		name   string
		policy middleware.AdmissionPolicy
		listed []string
		check  func(t *testing.T, err error) // for a call of "write"
	}{
		{"nothing", middleware.AllOf(), allGated, func(t *testing.T, err error) { assert.NoError(t, err) }},
		{"nils are skipped", middleware.AllOf(nil, nil), allGated, func(t *testing.T, err error) { assert.NoError(t, err) }},
		{"readonly and trust", middleware.AllOf(middleware.ModePolicy(middleware.ModeReadOnly), middleware.NewTrustGateway(middleware.TrustTrusted).Policy()),
			[]string{"health", "read", "server_ping"}, func(t *testing.T, err error) { assert.True(t, isUnknownTool(err, "write"), "%v", err) }},
		{"first refusal wins", middleware.AllOf(
			middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
				if tl.Name() == "write" {
					return middleware.Unauthorized(tl, "first", "first says no", nil)
				}
				return nil
			}),
			middleware.ModePolicy(middleware.ModeReadOnly)),
			[]string{"health", "read", "server_ping"},
			func(t *testing.T, err error) {
				se := requireStructured(t, err)
				assert.Equal(t, mcp.ErrUnauthorized, se.Code)
				assert.Equal(t, "first says no", se.Message)
			}},
		{"a plain error is UNAUTHORIZED", middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
			if tl.Name() == "write" && ac.Phase == middleware.PhaseCall {
				return boom
			}
			return nil
		}), allGated, func(t *testing.T, err error) {
			se := requireStructured(t, err)
			assert.Equal(t, mcp.ErrUnauthorized, se.Code)
			assert.NotContains(t, se.Message, "nope", "a plain error's text is masked")
			assert.Contains(t, se.Message, "admission policy")
		}},
		{"a JSON-RPC error is answered as is", middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
			if tl.Name() == "write" {
				return &mcp.Error{Code: -32000, Message: "go away"}
			}
			return nil
		}), []string{"health", "probe", "probe_ro", "read", "server_ping", "wipe"}, func(t *testing.T, err error) {
			var e *mcp.Error
			require.ErrorAs(t, err, &e)
			assert.EqualValues(t, -32000, e.Code)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := middleware.New(gatedTools(t), middleware.Lookup()).Admit(tt.policy)
			assert.Equal(t, tt.listed, listedNames(t, ch, ctx))
			_, err := callAt(ctx, ch, "write", nil)
			tt.check(t, err)
		})
	}
}

func TestAdmitStageRunsBeforeTheSlot(t *testing.T) {
	ctx := context.Background()
	var phases []middleware.AdmissionPhase
	lim := middleware.NewLimiter(1)
	p := middleware.AdmissionFunc(func(ctx context.Context, tl *registry.Tool, ac middleware.AdmissionContext) error {
		phases = append(phases, ac.Phase)
		assert.Zero(t, lim.InUse(), "admission happens before a concurrency slot is taken")
		if ac.Phase == middleware.PhaseCall {
			assert.Equal(t, "read", ac.Call.Name)
			assert.Empty(t, ac.TransportKind(), "no session outside a Server")
		}
		return nil
	})
	ch := middleware.Standard(gatedTools(t), &middleware.StandardOptions{Admission: p, Limiter: lim})
	_, err := callAt(ctx, ch, "read", nil)
	require.NoError(t, err)
	_, err = callAt(ctx, ch, "unknown", nil)
	assert.True(t, isUnknownTool(err, "unknown"), "unknown tools are answered by Lookup, before admission")
	assert.Equal(t, []middleware.AdmissionPhase{middleware.PhaseCall}, phases)
	assert.Equal(t, "call", middleware.PhaseCall.String())
	assert.Equal(t, "list", middleware.PhaseList.String())
}

// kindTransport reports a chosen transport kind (to test local_stdio_only
// over an in-memory pipe).
type kindTransport struct {
	transport.Transport
	kind string
}

func (k kindTransport) Kind() string { return k.kind }

// serveOn runs srv over a pipe whose server end reports kind and returns a
// connected, schema-checked Client.
func serveOn(t *testing.T, srv *mcp.Server, kind string, copts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	ct, st := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), kindTransport{st, kind}) }()
	if copts == nil {
		copts = &mcp.ClientOptions{ProtocolVersion: clientVersion, Capabilities: clientCapabilities, Logger: slog.New(slog.DiscardHandler)}
	}
	c := mcp.NewClient(copts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx, mcptest.ValidateTransport(t, ct)))
	t.Cleanup(func() {
		c.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server Run did not return")
		}
	})
	return c
}
