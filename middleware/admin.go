package middleware

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// The administrative tools: admin/registerTool adds a tool of a
// predefined type (echo, health, agentProxy: no code is uploaded) to the
// registry, admin/unregisterTool removes one it added. They exist only when
// both configuration switches are on (tools.adminRegistrationEnabled and
// security.dynamicRegistrationEnabled), and the admin policy says who may
// use them (tools.adminPolicy): nobody (deny_all, the default), the client
// that launched the server and talks to it over the process's standard
// input and output (local_stdio_only; the same newline-delimited protocol
// served on a socket does not count), or clients presenting the token
// held by an environment variable (token). To everybody else they are
// invisible in tools/list, and calling them gets an UNAUTHORIZED isError
// result.
//
// The names contain '/', which the 2025-11-25 tool-name rules (that
// registry enforces) exclude, so the tools are held by the Admin itself,
// under registry names with '.' in place of '/', and a Chain serving the
// Admin (StandardOptions.Admin, Chain.Mount) lists and calls them under
// their '/' names, through the same stages as every other tool.

// AdminPolicyMode says who may use the administrative tools (the
// configuration's tools.adminPolicy.mode; keel.AdminPolicyMode has the same
// values).
type AdminPolicyMode string

// Admin policy modes.
const (
	AdminDenyAll        AdminPolicyMode = "deny_all"         // nobody (the default)
	AdminLocalStdioOnly AdminPolicyMode = "local_stdio_only" // sessions on the process's own stdio (transport.KindStdio)
	AdminToken          AdminPolicyMode = "token"            // requests presenting the admin token
)

// Names of the administrative tools.
const (
	AdminRegisterToolName   = "admin/registerTool"
	AdminUnregisterToolName = "admin/unregisterTool"
)

// MetaAdminToken is the _meta key under which a tools/call of an
// administrative tool may carry the admin token (token mode).
const MetaAdminToken = "dev.keel/adminToken"

// DynamicModule is the module (registry.ToolOptions.Module) of tools
// registered through admin/registerTool.
const DynamicModule = "dynamic"

// Canonical input schemas of the built-in tool types, as
// compact JSON. A registration that supplies an inputSchema must match its
// type's schema byte for byte.
const (
	EchoSchema   = `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`
	HealthSchema = `{"type":"object","properties":{},"additionalProperties":false}`
)

// Tool type names of the built-in tool types. agentProxy is known but
// comes from package agents (agents.AgentProxyTool: see
// AdminOptions.ToolTypes); registering one in a server that did not add it
// gets NOT_IMPLEMENTED.
const (
	EchoToolTypeName       = "echo"
	HealthToolTypeName     = "health"
	AgentProxyToolTypeName = "agentProxy"
)

// ToolType makes the definition and handler of a dynamically registered
// tool of one type. The definition's InputSchema is the type's canonical
// schema; Name and Description are set to the requested ones by the caller
// in any case. agents.AgentProxyTool(coordinator) has a compatible shape:
//
//	func(name, description string) (*mcp.Tool, registry.ToolHandler) {
//		def, h := agents.AgentProxyTool(c)
//		return def, h
//	}
type ToolType func(name, description string) (*mcp.Tool, registry.ToolHandler)

// EchoToolType is the echo tool type: {"message": string} → one text block
// holding message (read-only).
func EchoToolType(name, description string) (*mcp.Tool, registry.ToolHandler) {
	ro := true
	def := &mcp.Tool{Name: name, Description: description, InputSchema: json.RawMessage(EchoSchema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &ro}}
	return def, func(_ context.Context, _ *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
		var in struct {
			Message string `json:"message"`
		}
		if err := jsonv2.Unmarshal(args, &in); err != nil {
			return nil, mcp.NewToolError(mcp.ErrInvalidInput, "echo: "+err.Error(), nil)
		}
		return mcp.TextResult(in.Message), nil
	}
}

// HealthToolType returns the health tool type: no arguments; the result
// is the HealthReport of opts (nil = defaults) as JSON text and
// structuredContent (read-only).
func HealthToolType(opts *HealthOptions) ToolType {
	o := healthDefaults(opts)
	return func(name, description string) (*mcp.Tool, registry.ToolHandler) {
		ro := true
		def := &mcp.Tool{Name: name, Description: description, InputSchema: json.RawMessage(HealthSchema),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &ro}}
		return def, func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
			b, err := jsonv2.Marshal(o.report(), jsonv2.Deterministic(true))
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text(string(b))}, StructuredContent: b}, nil
		}
	}
}

// AdminOptions configure the administrative tools. The zero value gives
// none (registration disabled).
type AdminOptions struct {
	// AdminRegistrationEnabled (tools.adminRegistrationEnabled) and
	// DynamicRegistrationEnabled (security.dynamicRegistrationEnabled)
	// must both be true for the tools to exist
	// (keel.Config.DynamicRegistrationEffective).
	AdminRegistrationEnabled   bool
	DynamicRegistrationEnabled bool
	// Policy says who may use the tools ("" = AdminDenyAll).
	Policy AdminPolicyMode
	// TokenEnvVar names the environment variable holding the admin token
	// (token mode; required there). It is read at every check, so the
	// token can be rotated; unset or empty, nobody is admitted.
	TokenEnvVar string
	// LookupEnv reads the environment (nil = os.LookupEnv).
	LookupEnv func(key string) (string, bool)
	// BearerToken returns the raw bearer token of the HTTP request ctx
	// belongs to, if the HTTP stack makes it available (nil or "" = none).
	// Token mode accepts it like a token in _meta[MetaAdminToken]; it is
	// also what makes the tools visible in tools/list in token mode.
	BearerToken func(ctx context.Context) string
	// ToolTypes maps toolType names to their makers (nil =
	// DefaultToolTypes()). Add agentProxy with agents.AgentProxyTool.
	ToolTypes map[string]ToolType
	// RegisterToolName and UnregisterToolName rename the tools (defaults
	// AdminRegisterToolName, AdminUnregisterToolName).
	RegisterToolName   string
	UnregisterToolName string
}

// DefaultToolTypes returns the built-in tool types: echo (EchoToolType)
// and health (HealthToolType(nil)).
func DefaultToolTypes() map[string]ToolType {
	return map[string]ToolType{EchoToolTypeName: EchoToolType, HealthToolTypeName: HealthToolType(nil)}
}

// Admin holds the administrative tools of one registry. It is an
// AdmissionPolicy for them (the admin policy), which a Chain serving it
// applies at list and call time. Create it with NewAdmin; serve it with
// StandardOptions.Admin or Chain.Mount.
type Admin struct {
	reg     *registry.Registry
	opts    AdminOptions
	enabled bool
	types   map[string]adminType
	side    *registry.Registry        // holds the admin tools under registry-valid names
	byWire  map[string]*registry.Tool // wire name → tool
	listed  []listedTool              // sorted by wire name
	mu      sync.Mutex
	dynamic map[string]string // name → toolType of the tools registered here
}

type adminType struct {
	make      ToolType
	canonical []byte // the compact canonical schema
}

// NewAdmin returns the administrative tools of reg configured by opts (nil
// = disabled). Unless both switches are on, the Admin holds no tools and
// admits everything. Errors: an unknown Policy, token mode without
// TokenEnvVar, a tool type whose maker returns no handler or no object
// schema.
func NewAdmin(reg *registry.Registry, opts *AdminOptions) (*Admin, error) {
	if reg == nil {
		return nil, errors.New("middleware: NewAdmin: nil registry")
	}
	a := &Admin{reg: reg, byWire: map[string]*registry.Tool{}, dynamic: map[string]string{}}
	if opts != nil {
		a.opts = *opts
	}
	o := &a.opts
	if o.Policy == "" {
		o.Policy = AdminDenyAll
	}
	switch o.Policy {
	case AdminDenyAll, AdminLocalStdioOnly:
	case AdminToken:
		if strings.TrimSpace(o.TokenEnvVar) == "" {
			return nil, errors.New("middleware: NewAdmin: token mode needs TokenEnvVar")
		}
	default:
		return nil, fmt.Errorf("middleware: NewAdmin: unknown admin policy %q (want deny_all, local_stdio_only or token)", o.Policy)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.RegisterToolName == "" {
		o.RegisterToolName = AdminRegisterToolName
	}
	if o.UnregisterToolName == "" {
		o.UnregisterToolName = AdminUnregisterToolName
	}
	if o.ToolTypes == nil {
		o.ToolTypes = DefaultToolTypes()
	}
	a.types = make(map[string]adminType, len(o.ToolTypes))
	for name, mk := range o.ToolTypes {
		if mk == nil {
			return nil, fmt.Errorf("middleware: NewAdmin: tool type %q has no maker", name)
		}
		def, h := mk("probe", "")
		if def == nil || h == nil {
			return nil, fmt.Errorf("middleware: NewAdmin: tool type %q makes no definition or no handler", name)
		}
		c := jsontext.Value(slices.Clone(def.InputSchema))
		if err := c.Compact(); err != nil || c.Kind() != '{' {
			return nil, fmt.Errorf("middleware: NewAdmin: tool type %q: its input schema is not a JSON object", name)
		}
		a.types[name] = adminType{make: mk, canonical: c}
	}
	a.enabled = o.AdminRegistrationEnabled && o.DynamicRegistrationEnabled
	if !a.enabled {
		return a, nil
	}
	a.side = registry.New(nil)
	if err := a.addTools(); err != nil {
		return nil, err
	}
	return a, nil
}

// Enabled reports whether the tools exist (both switches on).
func (a *Admin) Enabled() bool { return a.enabled }

// Tools returns the definitions of the administrative tools as tools/list
// shows them (none when disabled).
func (a *Admin) Tools() []*mcp.Tool {
	out := make([]*mcp.Tool, len(a.listed))
	for i, lt := range a.listed {
		out[i] = lt.def
	}
	return out
}

// lookup returns the administrative tool a tools/call names, if any.
func (a *Admin) lookup(name string) *registry.Tool {
	if a == nil || len(a.byWire) == 0 {
		return nil
	}
	return a.byWire[name]
}

// owns reports whether t is one of the administrative tools.
func (a *Admin) owns(t *registry.Tool) bool {
	for _, lt := range a.listed {
		if lt.tool == t {
			return true
		}
	}
	return false
}

// Admit implements AdmissionPolicy: the admin policy (see Authorize), for
// the administrative tools only (other tools are admitted). Refusals are
// UNAUTHORIZED: the tools are left out of tools/list, and calls get an
// UNAUTHORIZED isError result.
func (a *Admin) Admit(ctx context.Context, t *registry.Tool, ac AdmissionContext) error {
	if !a.owns(t) {
		return nil
	}
	return a.Authorize(ctx, t, ac)
}

// Authorize applies the admin policy to t, whichever tool it is, and
// whether or not the administrative tools are enabled: nil when the
// request may use t, an UNAUTHORIZED error (see Unauthorized) when not.
// Admit applies it to the administrative tools; call it from a policy of
// your own to gate other tools the same way, such as a lifecycle tool
// that stops the server. local_stdio_only admits sessions whose transport
// is of kind transport.KindStdio only: a server over its own standard
// input and output, not the same framing served on a socket
// (transport.KindStream).
func (a *Admin) Authorize(ctx context.Context, t *registry.Tool, ac AdmissionContext) error {
	switch a.opts.Policy {
	case AdminLocalStdioOnly:
		if k := ac.TransportKind(); k != transport.KindStdio {
			return Unauthorized(t, "transport", "admin operations are allowed only over the local stdio transport", map[string]any{"transport": k})
		}
		return nil
	case AdminToken:
		want, _ := a.opts.LookupEnv(a.opts.TokenEnvVar)
		if want == "" {
			return Unauthorized(t, "token_not_configured", "admin operations need a token, and none is configured", nil)
		}
		got := a.token(ctx, ac)
		if got == "" {
			return Unauthorized(t, "token_missing", "admin operations need the admin token (in _meta "+quote(MetaAdminToken)+" or as the bearer token)", nil)
		}
		if !sameSecret(got, want) {
			return Unauthorized(t, "token_invalid", "the admin token is not valid", nil)
		}
		return nil
	}
	return Unauthorized(t, "disabled", "admin operations are disabled (admin policy deny_all)", nil)
}

// token returns the token the request presents: the call's
// _meta[MetaAdminToken], else the bearer token.
func (a *Admin) token(ctx context.Context, ac AdmissionContext) string {
	if ac.Call != nil {
		if s, ok := ac.Call.Meta[MetaAdminToken].(string); ok && s != "" {
			return s
		}
	}
	if a.opts.BearerToken != nil {
		return a.opts.BearerToken(ctx)
	}
	return ""
}

// sameSecret compares two secrets in constant time (hashing first, so the
// time does not depend on their lengths either).
func sameSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// registryName returns a registry-valid name for a wire name: '/' and other
// characters the registry refuses become '.'.
func registryName(wire string) string {
	if registry.CheckToolName(wire) == nil {
		return wire
	}
	b := []byte(wire)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '.'
		}
	}
	return string(b)
}

// Input and output schemas of the administrative tools.
const (
	registerToolInput = `{"type":"object","properties":{` +
		`"name":{"type":"string","minLength":1,"maxLength":128,"description":"Name of the new tool"},` +
		`"description":{"type":"string","description":"Description of the new tool"},` +
		`"toolType":{"type":"string","description":"Predefined type that gives the tool its schema and behaviour"},` +
		`"inputSchema":{"type":"object","description":"Optional assertion: must equal the type's canonical schema byte for byte"}},` +
		`"required":["name","description","toolType"],"additionalProperties":false}`
	registerToolOutput   = `{"type":"object","properties":{"name":{"type":"string"},"toolType":{"type":"string"},"registered":{"type":"boolean"}},"required":["name","toolType","registered"]}`
	unregisterToolInput  = `{"type":"object","properties":{"name":{"type":"string","minLength":1,"description":"Name of a tool registered with registerTool"}},"required":["name"],"additionalProperties":false}`
	unregisterToolOutput = `{"type":"object","properties":{"name":{"type":"string"},"unregistered":{"type":"boolean"}},"required":["name","unregistered"]}`
)

// RegisterToolResult is admin/registerTool's structured result.
type RegisterToolResult struct {
	Name       string `json:"name"`
	ToolType   string `json:"toolType"`
	Registered bool   `json:"registered"`
}

// UnregisterToolResult is admin/unregisterTool's structured result.
type UnregisterToolResult struct {
	Name         string `json:"name"`
	Unregistered bool   `json:"unregistered"`
}

func (a *Admin) addTools() error {
	no, yes := false, true
	types := slices.Sorted(func(yield func(string) bool) {
		for k := range a.types {
			if !yield(k) {
				return
			}
		}
	})
	tools := []struct {
		wire, desc, in, out string
		ann                 *mcp.ToolAnnotations
		h                   registry.ToolHandler
	}{
		{a.opts.RegisterToolName, "Registers a tool of a predefined type (" + strings.Join(types, ", ") + ") under a new name. " +
			"The tool gets its type's canonical input schema; an inputSchema, if given, must match it exactly.",
			registerToolInput, registerToolOutput, &mcp.ToolAnnotations{Title: "Register a tool", DestructiveHint: &no, OpenWorldHint: &no}, a.register},
		{a.opts.UnregisterToolName, "Removes a tool registered with " + a.opts.RegisterToolName + ".",
			unregisterToolInput, unregisterToolOutput, &mcp.ToolAnnotations{Title: "Unregister a tool", DestructiveHint: &yes, OpenWorldHint: &no}, a.unregister},
	}
	for _, t := range tools {
		internal := registryName(t.wire)
		def := &mcp.Tool{Name: internal, Description: t.desc, InputSchema: json.RawMessage(t.in), OutputSchema: json.RawMessage(t.out), Annotations: t.ann}
		if err := a.side.AddTool(def, t.h, &registry.ToolOptions{Module: "admin"}); err != nil {
			return fmt.Errorf("middleware: NewAdmin: %w", err)
		}
		rt, _ := a.side.Lookup(internal)
		wire := *rt.Definition()
		wire.Name = t.wire
		a.byWire[t.wire] = rt
		a.listed = append(a.listed, listedTool{def: &wire, tool: rt})
	}
	slices.SortFunc(a.listed, func(x, y listedTool) int { return strings.Compare(x.def.Name, y.def.Name) })
	return nil
}

// invalidInput is the INVALID_INPUT error of arguments that passed the
// tool's input schema but cannot be accepted.
func invalidInput(reason, msg string, details map[string]any) *mcp.StructuredError {
	d := map[string]any{"reason": reason}
	for k, v := range details {
		d[k] = v
	}
	return mcp.NewToolError(mcp.ErrInvalidInput, msg, d)
}

func structured(v any) (*mcp.CallToolResult, error) {
	b, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text(string(b))}, StructuredContent: b}, nil
}

// register is admin/registerTool.
func (a *Admin) register(_ context.Context, _ *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
	var in struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		ToolType    string         `json:"toolType"`
		InputSchema jsontext.Value `json:"inputSchema,omitzero"`
	}
	if err := jsonv2.Unmarshal(args, &in); err != nil {
		return nil, invalidInput("invalid_arguments", "registerTool: "+err.Error(), nil)
	}
	typ, ok := a.types[in.ToolType]
	if !ok {
		known := slices.Sorted(func(yield func(string) bool) {
			for k := range a.types {
				if !yield(k) {
					return
				}
			}
		})
		if in.ToolType == AgentProxyToolTypeName {
			return nil, mcp.NewToolError(mcp.ErrNotImplemented, "toolType "+quote(in.ToolType)+" is not available in this server (available: "+strings.Join(known, ", ")+")",
				map[string]any{"reason": "tool_type_not_configured", "toolType": in.ToolType, "known": known})
		}
		return nil, invalidInput("unknown_tool_type", "unknown toolType "+quote(in.ToolType)+" (known: "+strings.Join(known, ", ")+")",
			map[string]any{"toolType": in.ToolType, "known": known})
	}
	if in.InputSchema != nil {
		got := slices.Clone(in.InputSchema)
		if err := got.Compact(); err != nil || string(got) != string(typ.canonical) {
			return nil, invalidInput("schema_mismatch", "inputSchema does not match the canonical schema of toolType "+quote(in.ToolType)+" byte for byte",
				map[string]any{"toolType": in.ToolType, "canonical": string(typ.canonical)})
		}
	}
	if in.Name == a.opts.RegisterToolName || in.Name == a.opts.UnregisterToolName || a.byWire[in.Name] != nil {
		return nil, invalidInput("reserved_name", "tool name "+quote(in.Name)+" is reserved", map[string]any{"name": in.Name})
	}
	if err := registry.CheckToolName(in.Name); err != nil {
		return nil, invalidInput("invalid_name", err.Error(), map[string]any{"name": in.Name})
	}
	if _, exists := a.reg.Lookup(in.Name); exists {
		return nil, invalidInput("duplicate_name", "a tool named "+quote(in.Name)+" is already registered", map[string]any{"name": in.Name})
	}
	def, h := typ.make(in.Name, in.Description)
	d := *def
	d.Name, d.Description = in.Name, in.Description
	if got := jsontext.Value(slices.Clone(d.InputSchema)); got.Compact() != nil || string(got) != string(typ.canonical) {
		return nil, mcp.NewToolError(mcp.ErrInternal, "tool type "+quote(in.ToolType)+" made a definition without its canonical schema", nil)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.reg.AddTool(&d, h, &registry.ToolOptions{Module: DynamicModule}); err != nil {
		var se *mcp.StructuredError
		if errors.As(err, &se) {
			return nil, invalidInput("registration_failed", err.Error(), map[string]any{"name": in.Name})
		}
		return nil, err
	}
	a.dynamic[in.Name] = in.ToolType
	return structured(RegisterToolResult{Name: in.Name, ToolType: in.ToolType, Registered: true})
}

// unregister is admin/unregisterTool.
func (a *Admin) unregister(_ context.Context, _ *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := jsonv2.Unmarshal(args, &in); err != nil {
		return nil, invalidInput("invalid_arguments", "unregisterTool: "+err.Error(), nil)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.dynamic[in.Name]; !ok {
		if _, exists := a.reg.Lookup(in.Name); exists {
			return nil, invalidInput("not_dynamic", "tool "+quote(in.Name)+" was not registered with "+a.opts.RegisterToolName+" and cannot be unregistered", map[string]any{"name": in.Name})
		}
		return nil, mcp.NewToolError(mcp.ErrNotFound, "no tool named "+quote(in.Name)+" was registered with "+a.opts.RegisterToolName, map[string]any{"name": in.Name})
	}
	delete(a.dynamic, in.Name)
	if !a.reg.Remove(in.Name) {
		return nil, mcp.NewToolError(mcp.ErrNotFound, "tool "+quote(in.Name)+" is no longer registered", map[string]any{"name": in.Name})
	}
	return structured(UnregisterToolResult{Name: in.Name, Unregistered: true})
}
