package middleware

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Handler serves one tools/call: it returns the result, or an error the
// Server maps to the response (a *mcp.StructuredError, or an error wrapping
// one, becomes an isError result; a *mcp.Error becomes a JSON-RPC error;
// anything else becomes an INTERNAL isError result).
type Handler func(ctx context.Context, c *Call) (*mcp.CallToolResult, error)

// Middleware wraps a Handler with one stage of the tools/call chain. It is
// called once, when the chain is built, and returns the Handler that runs for
// every call; per-call work belongs in that returned Handler.
type Middleware func(next Handler) Handler

// Chain is a tools/call chain around a registry: middlewares in the order
// given, the first listed outermost, ending in Dispatch. It implements
// mcp.ToolSource, so it goes straight into mcp.ServerOptions.Tools.
//
// Add middlewares with New and Use before the chain serves its first call.
// The composed Handler is built once, on the first call (or the first call
// of Handler); after that the chain is frozen and Use panics.
type Chain struct {
	reg *registry.Registry

	mu     sync.Mutex // guards mws, policy, admin and built against Use
	mws    []Middleware
	policy AdmissionPolicy // what tools/list shows (see Admit, admission.go)
	admin  *Admin          // administrative tools served besides the registry's (admin.go)
	built  atomic.Bool
	once   sync.Once
	h      Handler
}

// New returns a chain over reg running mws, the first listed outermost,
// and then Dispatch. It panics if reg is nil.
func New(reg *registry.Registry, mws ...Middleware) *Chain {
	if reg == nil {
		panic("middleware: New called with a nil registry")
	}
	ch := &Chain{reg: reg}
	return ch.Use(mws...)
}

// Unwrap returns the registry the chain runs over, so that
// mcp.ServerOptions accepts the chain as Tools next to the same registry
// as Registry.
func (ch *Chain) Unwrap() mcp.ToolSource { return ch.reg }

// Use appends mws to the chain (inside those already added) and returns the
// chain: Use(A); Use(B, C) is the same chain as Use(A, B, C). It panics if a
// middleware is nil, or if the chain has already been built (it served a call
// or Handler was called): a chain is configured first, then served.
func (ch *Chain) Use(mws ...Middleware) *Chain {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.built.Load() {
		panic("middleware: Chain.Use called after the chain was built (it has served a call); add every middleware before serving")
	}
	for i, mw := range mws {
		if mw == nil {
			panic(fmt.Sprintf("middleware: Chain.Use: middleware %d is nil", i))
		}
	}
	ch.mws = append(ch.mws, mws...)
	return ch
}

// Len returns the number of middlewares in the chain (Dispatch not counted).
func (ch *Chain) Len() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return len(ch.mws)
}

// Registry returns the registry the chain serves.
func (ch *Chain) Registry() *registry.Registry { return ch.reg }

// Handler returns the composed Handler, building it on first use. After
// Handler has been called the chain is frozen.
func (ch *Chain) Handler() Handler {
	ch.once.Do(ch.build)
	return ch.h
}

func (ch *Chain) build() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.built.Store(true)
	h := Handler(Dispatch)
	for i := len(ch.mws) - 1; i >= 0; i-- {
		h = ch.mws[i](h)
		if h == nil {
			panic(fmt.Sprintf("middleware: middleware %d returned a nil Handler", i))
		}
	}
	ch.h = h
}

// Admit adds the admission stage of policy p at this point of the chain
// (Use(Admit(p))) and makes ListTools leave out the tools p does not admit:
// one policy, applied at list time and at call time. Several calls
// compose (AllOf). It panics once the chain has been built, like Use.
func (ch *Chain) Admit(p AdmissionPolicy) *Chain {
	ch.Use(Admit(p))
	ch.mu.Lock()
	ch.policy = AllOf(ch.policy, p)
	ch.mu.Unlock()
	return ch
}

// Mount serves a's administrative tools (see NewAdmin) besides the
// registry's, through the same stages, and applies a's admin policy as
// Admit(a) does, at this point of the chain. A disabled Admin adds nothing.
// It panics once the chain has been built, like Use.
func (ch *Chain) Mount(a *Admin) *Chain {
	if a == nil || !a.Enabled() {
		return ch
	}
	ch.Admit(a)
	ch.mu.Lock()
	ch.admin = a
	ch.mu.Unlock()
	return ch
}

// listing returns what ListTools and FindTool work from.
func (ch *Chain) listing() (AdmissionPolicy, *Admin) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.policy, ch.admin
}

// OnChange registers f to run after the registry's set of tools changes, so
// a Server serving the chain declares tools.listChanged and notifies its
// sessions (mcp.ChangeNotifier).
func (ch *Chain) OnChange(f func()) { ch.reg.OnChange(f) }

// ListTools implements mcp.ToolSource: it returns the registry's tools
// (and the administrative tools of a mounted Admin) that the admission
// policies installed with Admit admit for the request (its session comes
// from mcp.SessionFromContext), sorted by name.
func (ch *Chain) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	policy, admin := ch.listing()
	if policy == nil && admin == nil {
		return ch.reg.ListTools(ctx)
	}
	tools := ch.reg.Tools()
	listed := make([]listedTool, 0, len(tools)+2)
	for _, t := range tools {
		listed = append(listed, listedTool{def: t.Definition(), tool: t})
	}
	if admin != nil {
		listed = append(listed, admin.listed...)
		slices.SortFunc(listed, func(a, b listedTool) int { return strings.Compare(a.def.Name, b.def.Name) })
	}
	return admitted(ctx, policy, listed), nil
}

// FindTool implements mcp.ToolFinder: the definition of the named tool if
// ListTools would list it for the request.
func (ch *Chain) FindTool(ctx context.Context, name string) (*mcp.Tool, bool) {
	policy, admin := ch.listing()
	t := admin.lookup(name)
	def := (*mcp.Tool)(nil)
	if t != nil {
		for _, lt := range admin.listed {
			if lt.tool == t {
				def = lt.def
			}
		}
	} else if rt, ok := ch.reg.Lookup(name); ok {
		t, def = rt, rt.Definition()
	} else {
		return nil, false
	}
	if policy != nil && policy.Admit(ctx, t, admissionContext(ctx, PhaseList, mcp.SessionFromContext(ctx), nil)) != nil {
		return nil, false
	}
	return def, true
}

// CallTool implements mcp.ToolSource: it runs tc through the chain. It also
// keeps the process-wide RESOURCE_EXHAUSTED counter (see
// ResourceExhaustedCount).
func (ch *Chain) CallTool(ctx context.Context, tc *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if tc == nil {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: missing tool call"}
	}
	h := ch.Handler() // builds the chain: ch.admin is frozen from here on
	c := NewCall(ch.reg, tc)
	if t := ch.admin.lookup(tc.Name); t != nil {
		c.tool, c.resolved = t, true
	}
	res, err := h(ctx, c)
	if res == nil && err == nil {
		err = c.toolError(mcp.ErrInternal, "tool "+quote(c.Name)+" returned no result", nil)
	}
	recordCompletion(err)
	return res, err
}

func quote(s string) string { return strconv.Quote(s) }
