package middleware

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/keelmcp/keel/registry"
)

// Defaults of ModeAdmission.
var (
	// DefaultCoreTools are the tools MINIMAL admits: server_ping and
	// health (RegisterPingTool and RegisterHealthTool with their default
	// names).
	DefaultCoreTools = []string{"health", "server_ping"}
)

// DefaultTestModule is the module (registry.ToolOptions.Module) of
// test-only tools, which only TEST admits.
const DefaultTestModule = "test"

// ModeAdmission is the admission policy of a runtime mode. What
// each mode admits:
//
//	FULL      every tool except test-only tools
//	READONLY  read-only tools (annotations.readOnlyHint true, which
//	          registry.ToolOptions.ReadOnly sets), except test-only tools
//	TEST      every tool, test-only tools included
//	MINIMAL   the core tools only (Core: server_ping and health)
//
// A test-only tool is one registered with registry.ToolOptions.Module ==
// TestModule ("test"). A tool a mode does not admit does not exist in that
// mode: it is not listed, and a call of it is answered exactly like a call
// of an unregistered tool (see Hidden). An invalid Mode admits nothing.
type ModeAdmission struct {
	// Mode is FULL, READONLY, TEST or MINIMAL.
	Mode Mode
	// Core lists the tools MINIMAL admits, by name (nil =
	// DefaultCoreTools).
	Core []string
	// TestModule is the module of test-only tools ("" =
	// DefaultTestModule).
	TestModule string
}

// ModePolicy returns the admission policy of mode with the default core
// tools and test module (see ModeAdmission).
func ModePolicy(mode Mode) *ModeAdmission { return &ModeAdmission{Mode: mode} }

// Admit implements AdmissionPolicy.
func (m *ModeAdmission) Admit(_ context.Context, t *registry.Tool, _ AdmissionContext) error {
	if m.admits(t) {
		return nil
	}
	return Hidden(t, "tool "+quote(t.Name())+" is not admitted in mode "+string(m.Mode))
}

func (m *ModeAdmission) admits(t *registry.Tool) bool {
	switch m.Mode {
	case ModeTest:
		return true
	case ModeFull:
		return !m.testOnly(t)
	case ModeReadOnly:
		return IsReadOnly(t) && !m.testOnly(t)
	case ModeMinimal:
		core := m.Core
		if core == nil {
			core = DefaultCoreTools
		}
		return slices.Contains(core, t.Name())
	}
	return false
}

func (m *ModeAdmission) testOnly(t *registry.Tool) bool {
	mod := m.TestModule
	if mod == "" {
		mod = DefaultTestModule
	}
	return ToolModule(t) == mod
}

// IsReadOnly reports whether t declares annotations.readOnlyHint true (set
// by registry.ToolOptions.ReadOnly).
func IsReadOnly(t *registry.Tool) bool {
	a := t.Definition().Annotations
	return a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint
}

// IsDestructive reports whether t is marked destructive:
// annotations.destructiveHint true (set by registry.ToolOptions.Destructive)
// and not read-only. Tools without the hint are not counted as destructive,
// although MCP clients assume that of tools that are not read-only.
func IsDestructive(t *registry.Tool) bool {
	a := t.Definition().Annotations
	return a != nil && a.DestructiveHint != nil && *a.DestructiveHint && !IsReadOnly(t)
}

// ToolModule returns t's module (registry.ToolOptions.Module, published in
// _meta under registry.MetaModule), or "".
func ToolModule(t *registry.Tool) string {
	m, _ := t.Definition().Meta[registry.MetaModule].(string)
	return m
}

// TrustState is the state of a trust gateway: destructive tools
// run only while it is TRUSTED.
type TrustState string

// Trust states.
const (
	TrustUntrusted TrustState = "UNTRUSTED"
	TrustTrusted   TrustState = "TRUSTED"
)

// TrustPolicy returns the policy that blocks destructive tools (see
// IsDestructive) unless state reports TRUSTED for the request: the gate is
// enforced by the call chain, not by each tool. state may look at
// ctx (the session, a verified token, ...); a nil state is always
// UNTRUSTED. Destructive tools stay listed — they exist, but need trust —
// and a call while untrusted gets a PERMISSION_DENIED isError result (see
// Denied: the state forbids the operation, whoever asks) with details
// {"tool", "reason": "untrusted", "trustState", "required": "TRUSTED"}.
// Other tools are always admitted.
func TrustPolicy(state func(ctx context.Context) TrustState) AdmissionPolicy {
	return AdmissionFunc(func(ctx context.Context, t *registry.Tool, ac AdmissionContext) error {
		if ac.Phase != PhaseCall || !IsDestructive(t) {
			return nil
		}
		s := TrustUntrusted
		if state != nil {
			s = state(ctx)
		}
		if s == TrustTrusted {
			return nil
		}
		return Denied(t, "untrusted", "tool "+quote(t.Name())+" is destructive and runs only while the trust state is TRUSTED (it is "+string(s)+")",
			map[string]any{"trustState": string(s), "required": string(TrustTrusted)})
	})
}

// TrustGateway holds a process-wide trust state that can change at run
// time; its State method is what TrustPolicy takes. The zero value is
// UNTRUSTED. It is safe for concurrent use.
type TrustGateway struct {
	trusted atomic.Bool
}

// NewTrustGateway returns a gateway in state s.
func NewTrustGateway(s TrustState) *TrustGateway {
	g := &TrustGateway{}
	g.Set(s)
	return g
}

// Set changes the state: anything but TRUSTED is UNTRUSTED.
func (g *TrustGateway) Set(s TrustState) { g.trusted.Store(s == TrustTrusted) }

// State returns the current state (ctx is ignored).
func (g *TrustGateway) State(context.Context) TrustState {
	if g.trusted.Load() {
		return TrustTrusted
	}
	return TrustUntrusted
}

// Policy returns TrustPolicy(g.State).
func (g *TrustGateway) Policy() AdmissionPolicy { return TrustPolicy(g.State) }
