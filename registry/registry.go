package registry

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/mcp"
)

// Options configures a Registry. A nil *Options means the defaults.
type Options struct {
	// Logger receives registration events at debug level; nil means
	// slog.Default().
	Logger *slog.Logger
}

// ErrDuplicateTool is matched (errors.Is) by the error of a registration
// whose name is taken. Handlers cannot be compared, so registering a name
// again is refused even with the same definition: remove the tool first to
// replace it.
var ErrDuplicateTool = errors.New("a tool with this name is already registered")

// Registry is a catalog of tools. It satisfies mcp.ToolSource with plain
// dispatch (lookup, validate, invoke); wrap it in a middleware chain for
// locking, auditing, deadlines and the rest.
//
// All methods are safe for concurrent use. Reads (Lookup, ListTools,
// CallTool) load an immutable snapshot — a map by name and the sorted
// lists — with one atomic load and no lock. Changes (AddTool, Register,
// Remove) are serialized and drop the snapshot; the first read after a
// burst of changes rebuilds it once.
type Registry struct {
	log *slog.Logger

	mu        sync.Mutex       // serializes changes; guards tools and listeners
	tools     map[string]*Tool // the current set, owned by mu
	listeners []func()

	snap atomic.Pointer[snapshot] // nil: stale, rebuilt on the next read

	res resourceCatalog // resources and resource templates (resources.go)
	prm promptCatalog   // prompts (prompts.go)
}

// snapshot is an immutable view of the set of tools.
type snapshot struct {
	byName map[string]*Tool
	sorted []*Tool
	defs   []*mcp.Tool
}

// New returns an empty Registry.
func New(opts *Options) *Registry {
	r := &Registry{tools: map[string]*Tool{}, log: slog.Default()}
	if opts != nil && opts.Logger != nil {
		r.log = opts.Logger
	}
	return r
}

var _ mcp.ToolSource = (*Registry)(nil)

// AddTool registers a tool described by a raw JSON Schema definition. The
// definition is copied (the caller may reuse def); opts adds metadata (see
// ToolOptions) and may be nil.
//
// The input schema (and output schema, if present) must be a JSON object
// with "type": "object" at its root. The dialect is JSON Schema 2020-12
// unless "$schema" names draft-07 (or 2019-09, draft-06, draft-04); any other
// "$schema" is refused. References must resolve inside the schema: nothing is
// fetched from the network or read from files. Each schema is compiled once,
// here.
//
// A tool whose result declares an outputSchema must return results with a
// matching structuredContent (see Tool.Invoke).
//
// Registering a name that is already registered is an error matching
// ErrDuplicateTool, also with the same definition (handlers cannot be
// compared, so keeping either one silently would hide a mistake); Remove
// the tool first to replace it.
// Every error is a *RegistrationError naming the tool.
func (r *Registry) AddTool(def *mcp.Tool, h ToolHandler, opts *ToolOptions) error {
	t, err := newTool(def, h, opts)
	if err != nil {
		return err
	}
	return r.add(t)
}

func (r *Registry) add(t *Tool) error {
	r.mu.Lock()
	if _, ok := r.tools[t.Name()]; ok {
		r.mu.Unlock()
		return &RegistrationError{Tool: t.Name(), Err: ErrDuplicateTool}
	}
	r.tools[t.Name()] = t
	r.snap.Store(nil)
	listeners := r.listeners
	r.mu.Unlock()
	r.log.Debug("registry: tool registered", "tool", t.Name())
	notify(listeners)
	return nil
}

// Remove unregisters the named tool and reports whether it was registered.
// Calls already running finish normally.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	if _, ok := r.tools[name]; !ok {
		r.mu.Unlock()
		return false
	}
	delete(r.tools, name)
	r.snap.Store(nil)
	listeners := r.listeners
	r.mu.Unlock()
	r.log.Debug("registry: tool removed", "tool", name)
	notify(listeners)
	return true
}

// OnChange registers f to be called after every change to the set of tools
// (a registration that adds a tool, a Remove that removes one), for example
// to send notifications/tools/list_changed. f runs synchronously in the
// goroutine that made the change, outside the registry's locks, so it may
// call the registry.
func (r *Registry) OnChange(f func()) {
	if f == nil {
		return
	}
	r.mu.Lock()
	r.listeners = append(slices.Clip(r.listeners), f)
	r.mu.Unlock()
}

func notify(listeners []func()) {
	for _, f := range listeners {
		f()
	}
}

// load returns the current snapshot, rebuilding it after a change.
func (r *Registry) load() *snapshot {
	if s := r.snap.Load(); s != nil {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.snap.Load(); s != nil {
		return s
	}
	s := &snapshot{byName: make(map[string]*Tool, len(r.tools)), sorted: make([]*Tool, 0, len(r.tools))}
	for name, t := range r.tools {
		s.byName[name] = t
		s.sorted = append(s.sorted, t)
	}
	slices.SortFunc(s.sorted, func(a, b *Tool) int { return strings.Compare(a.Name(), b.Name()) })
	s.defs = make([]*mcp.Tool, len(s.sorted))
	for i, t := range s.sorted {
		s.defs[i] = t.def
	}
	r.snap.Store(s)
	return s
}

// Lookup returns the named tool.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	t, ok := r.load().byName[name]
	return t, ok
}

// Len returns the number of registered tools.
func (r *Registry) Len() int { return len(r.load().sorted) }

// Tools returns the registered tools sorted by name, in a new slice.
func (r *Registry) Tools() []*Tool { return slices.Clone(r.load().sorted) }

// ListTools returns the wire definitions of all tools sorted by name
// (mcp.ToolSource). The slice is cached until the set of tools changes and is
// shared between callers: do not modify it or its elements.
func (r *Registry) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	return r.load().defs, nil
}

// FindTool returns the wire definition of the named tool (mcp.ToolFinder):
// a lookup by name, without listing every tool.
func (r *Registry) FindTool(_ context.Context, name string) (*mcp.Tool, bool) {
	t, ok := r.Lookup(name)
	if !ok {
		return nil, false
	}
	return t.def, true
}

// CallTool runs one tools/call with plain dispatch (mcp.ToolSource): it
// looks the tool up, validates the arguments and invokes the handler.
//
// An unknown tool is an *mcp.Error with code -32602 (invalid params) whose
// Data is a NOT_FOUND *mcp.StructuredError; arguments that fail the input
// schema return the INVALID_ARGUMENT *mcp.StructuredError of
// Tool.ValidateArguments without running the handler. Both carry the call's
// correlation and run ids.
func (r *Registry) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	t, ok := r.Lookup(call.Name)
	if !ok {
		return nil, UnknownToolError(call)
	}
	if se := t.ValidateArguments(call.Arguments); se != nil {
		se.CorrelationID, se.RunID = call.CorrelationID, call.RunID
		return nil, se
	}
	return t.Invoke(ctx, call, call.Arguments)
}

// UnknownToolError returns the error for a tools/call of a tool that is not
// registered: an *mcp.Error with code -32602 whose Data is a NOT_FOUND
// *mcp.StructuredError with Details {"tool": name} and the call's ids.
func UnknownToolError(call *mcp.ToolCall) *mcp.Error {
	msg := "unknown tool " + strconv.Quote(call.Name)
	return &mcp.Error{
		Code:    mcp.CodeInvalidParams,
		Message: msg,
		Data: &mcp.StructuredError{
			Code:          mcp.ErrNotFound,
			Message:       msg,
			Details:       map[string]any{"tool": call.Name},
			CorrelationID: call.CorrelationID,
			RunID:         call.RunID,
		},
	}
}
