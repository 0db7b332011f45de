package middleware

import (
	"context"
	"fmt"
	"strconv"
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

	mu    sync.Mutex // guards mws and built against Use
	mws   []Middleware
	built atomic.Bool
	once  sync.Once
	h     Handler
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

// ListTools implements mcp.ToolSource: it returns the registry's tools.
// OnChange registers f to run after the registry's set of tools changes, so
// a Server serving the chain declares tools.listChanged and notifies its
// sessions (mcp.ChangeNotifier).
func (ch *Chain) OnChange(f func()) { ch.reg.OnChange(f) }

func (ch *Chain) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	return ch.reg.ListTools(ctx)
}

// CallTool implements mcp.ToolSource: it runs tc through the chain. It also
// keeps the process-wide RESOURCE_EXHAUSTED counter (see
// ResourceExhaustedCount).
func (ch *Chain) CallTool(ctx context.Context, tc *mcp.ToolCall) (*mcp.CallToolResult, error) {
	if tc == nil {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: missing tool call"}
	}
	c := NewCall(ch.reg, tc)
	res, err := ch.Handler()(ctx, c)
	if res == nil && err == nil {
		err = c.toolError(mcp.ErrInternal, "tool "+quote(c.Name)+" returned no result", nil)
	}
	recordCompletion(err)
	return res, err
}

func quote(s string) string { return strconv.Quote(s) }
