package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
)

// ErrDuplicatePrompt is matched (errors.Is) by the error of a prompt
// registration whose name is taken.
var ErrDuplicatePrompt = errors.New("a prompt with this name is already registered")

// PromptHandler renders a prompt from its arguments. The registry has
// already checked them: every required argument is present and no other
// is. Messages may hold any content type (see the mcp content helpers).
type PromptHandler func(ctx context.Context, args map[string]string) (*mcp.GetPromptResult, error)

// PromptOptions are extra settings of a prompt (nil = none).
type PromptOptions struct {
	// Title, Icons and Meta complete the prompt's definition (AddPrompt:
	// where the definition leaves them empty).
	Title string
	Icons []mcp.Icon
	Meta  mcp.Meta
	// Complete offers completions of the prompt's arguments
	// (completion/complete with a ref/prompt reference), by argument name.
	// Each name must be an argument of the prompt.
	Complete map[string]Completer
}

type promptCatalog struct {
	mu       sync.Mutex
	prompts  map[string]*prompt
	onChange []func()
	snap     atomic.Pointer[promptSnapshot]
}

type prompt struct {
	def      *mcp.Prompt
	handler  PromptHandler
	complete map[string]Completer
	args     map[string]bool // argument name → required
}

type promptSnapshot struct {
	byName map[string]*prompt
	list   []*mcp.Prompt // sorted by name
}

var (
	_ mcp.PromptSource         = (*Registry)(nil)
	_ mcp.PromptChangeNotifier = (*Registry)(nil)
)

// AddPrompt registers a prompt described by def (Name is required; each
// argument needs a name, unique within the prompt), rendered by h. The
// definition is copied; opts may be nil. Registering a name that is already
// registered is an error matching ErrDuplicatePrompt, also with the same
// definition (handlers cannot be compared); RemovePrompt first to replace
// it. Every error is a *RegistrationError.
func (r *Registry) AddPrompt(def *mcp.Prompt, h PromptHandler, opts *PromptOptions) error {
	p, err := newPrompt(def, h, opts)
	if err != nil {
		return err
	}
	return r.addPrompt(p)
}

// RegisterPrompt registers a prompt whose arguments are the fields of the
// struct Args: each exported field is one argument, named like its JSON
// member (`json:"name"`; `json:"-"` skips it), described by the
// description (and title) of its `jsonschema:"description=...,title=..."`
// tag. Prompt arguments are strings: fields must be string or *string
// (another type is a registration error). A field is required unless it is
// a pointer or its json tag says omitempty or omitzero. On prompts/get the
// registry checks the arguments (a missing required one, or one the prompt
// does not have, is -32602), fills an Args and calls h with it; absent
// optional arguments stay empty (nil for pointers).
func RegisterPrompt[Args any](r *Registry, name, description string, h func(ctx context.Context, args Args) (*mcp.GetPromptResult, error), opts *PromptOptions) error {
	fail := func(format string, a ...any) error {
		return &RegistrationError{Kind: KindPrompt, Tool: name, Err: fmt.Errorf(format, a...)}
	}
	if h == nil {
		return fail("nil handler")
	}
	t := reflect.TypeFor[Args]()
	arguments, fields, err := derivePromptArgs(t)
	if err != nil {
		return fail("argument type %v: %v", t, err)
	}
	def := &mcp.Prompt{Name: name, Description: description, Arguments: arguments}
	return r.AddPrompt(def, func(ctx context.Context, args map[string]string) (*mcp.GetPromptResult, error) {
		var a Args
		fillPromptArgs(reflect.ValueOf(&a).Elem(), fields, args)
		return h(ctx, a)
	}, opts)
}

// MustRegisterPrompt is like RegisterPrompt but panics if the registration
// fails (for main packages and examples).
func MustRegisterPrompt[Args any](r *Registry, name, description string, h func(ctx context.Context, args Args) (*mcp.GetPromptResult, error), opts *PromptOptions) {
	if err := RegisterPrompt(r, name, description, h, opts); err != nil {
		panic(err)
	}
}

func newPrompt(def *mcp.Prompt, h PromptHandler, opts *PromptOptions) (*prompt, error) {
	if def == nil {
		return nil, &RegistrationError{Kind: KindPrompt, Err: errors.New("nil definition")}
	}
	fail := func(format string, a ...any) error {
		return &RegistrationError{Kind: KindPrompt, Tool: def.Name, Err: fmt.Errorf(format, a...)}
	}
	if def.Name == "" {
		return nil, fail("prompt name is empty")
	}
	if h == nil {
		return nil, fail("nil handler")
	}
	d := *def
	d.Arguments = slices.Clone(def.Arguments)
	d.Icons = slices.Clone(def.Icons)
	d.Meta = cloneMeta(def.Meta)
	var o PromptOptions
	if opts != nil {
		o = *opts
	}
	if d.Title == "" {
		d.Title = o.Title
	}
	if d.Icons == nil {
		d.Icons = slices.Clone(o.Icons)
	}
	if d.Meta == nil {
		d.Meta = cloneMeta(o.Meta)
	}
	for k := range d.Meta {
		if !ValidMetaKey(k) {
			return nil, fail("_meta key %q does not follow the MCP key rules", k)
		}
	}
	p := &prompt{def: &d, handler: h, args: make(map[string]bool, len(d.Arguments))}
	for _, a := range d.Arguments {
		if a.Name == "" {
			return nil, fail("an argument has no name")
		}
		if _, dup := p.args[a.Name]; dup {
			return nil, fail("argument %q is declared twice", a.Name)
		}
		p.args[a.Name] = a.Required
	}
	if len(o.Complete) > 0 {
		p.complete = make(map[string]Completer, len(o.Complete))
		for name, c := range o.Complete {
			if _, ok := p.args[name]; !ok {
				return nil, fail("completion for %q, which is not an argument of the prompt", name)
			}
			if c == nil {
				return nil, fail("nil completer for argument %q", name)
			}
			p.complete[name] = c
		}
	}
	if _, err := json.Marshal(&d); err != nil {
		return nil, fail("definition not encodable: %v", err)
	}
	return p, nil
}

func (r *Registry) addPrompt(p *prompt) error {
	c := &r.prm
	c.mu.Lock()
	added := insertUnique(&c.prompts, p.def.Name, p)
	var listeners []func()
	if added {
		c.snap.Store(nil)
		listeners = c.onChange
	}
	c.mu.Unlock()
	return r.registered(added, listeners, KindPrompt, p.def.Name, ErrDuplicatePrompt, "prompt", "prompt")
}

// RemovePrompt unregisters the named prompt and reports whether it was
// registered.
func (r *Registry) RemovePrompt(name string) bool {
	c := &r.prm
	c.mu.Lock()
	if _, ok := c.prompts[name]; !ok {
		c.mu.Unlock()
		return false
	}
	delete(c.prompts, name)
	c.snap.Store(nil)
	listeners := c.onChange
	c.mu.Unlock()
	notify(listeners)
	return true
}

// OnPromptsChange registers f to be called after every change to the set
// of prompts (mcp.PromptChangeNotifier, for
// notifications/prompts/list_changed). f runs synchronously in the
// goroutine that made the change, outside the registry's locks.
func (r *Registry) OnPromptsChange(f func()) {
	if f == nil {
		return
	}
	r.prm.mu.Lock()
	r.prm.onChange = append(slices.Clip(r.prm.onChange), f)
	r.prm.mu.Unlock()
}

func (c *promptCatalog) load() *promptSnapshot {
	if s := c.snap.Load(); s != nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.snap.Load(); s != nil {
		return s
	}
	s := &promptSnapshot{byName: make(map[string]*prompt, len(c.prompts)), list: make([]*mcp.Prompt, 0, len(c.prompts))}
	for name, p := range c.prompts {
		s.byName[name] = p
		s.list = append(s.list, p.def)
	}
	slices.SortFunc(s.list, func(a, b *mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
	c.snap.Store(s)
	return s
}

// ListPrompts returns the prompts sorted by name (mcp.PromptSource). The
// slice is cached until the set changes and is shared: do not modify it or
// its elements.
func (r *Registry) ListPrompts(context.Context) ([]*mcp.Prompt, error) {
	return r.prm.load().list, nil
}

// GetPrompt renders a prompt (mcp.PromptSource). An unknown prompt, a
// missing required argument or an argument the prompt does not have is an
// *mcp.Error with code -32602 whose data is a StructuredError (NOT_FOUND or
// INVALID_ARGUMENT). The handler's result must hold messages with role
// user or assistant and valid content (mcp.Content.Validate); otherwise the
// result is an INTERNAL error.
func (r *Registry) GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	pr, ok := r.prm.load().byName[p.Name]
	if !ok {
		return nil, unknownPromptError(p.Name)
	}
	var missing, unknown []string
	for name, required := range pr.args {
		if _, ok := p.Arguments[name]; required && !ok {
			missing = append(missing, name)
		}
	}
	for name := range p.Arguments {
		if _, ok := pr.args[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(missing) > 0 || len(unknown) > 0 {
		sort.Strings(missing)
		sort.Strings(unknown)
		var parts []string
		details := map[string]any{"prompt": p.Name}
		if len(missing) > 0 {
			parts = append(parts, "missing required argument(s) "+strings.Join(missing, ", "))
			details["missing"] = missing
		}
		if len(unknown) > 0 {
			parts = append(parts, "unknown argument(s) "+strings.Join(unknown, ", "))
			details["unknown"] = unknown
		}
		return nil, invalidParamsError(fmt.Sprintf("prompt %q: %s", p.Name, strings.Join(parts, "; ")), details)
	}
	args := p.Arguments
	if args == nil {
		args = map[string]string{}
	}
	res, err := pr.handler(ctx, args)
	if err != nil {
		return nil, err
	}
	if err := checkPromptResult(res); err != nil {
		return nil, &mcp.StructuredError{Code: mcp.ErrInternal, Message: fmt.Sprintf("prompt %q: %v", p.Name, err),
			Details: map[string]any{"prompt": p.Name}}
	}
	return res, nil
}

func checkPromptResult(res *mcp.GetPromptResult) error {
	if res == nil {
		return errors.New("the handler returned no result")
	}
	for i := range res.Messages {
		m := &res.Messages[i]
		if m.Role != mcp.RoleUser && m.Role != mcp.RoleAssistant {
			return fmt.Errorf("message %d: role %q is not user or assistant", i, m.Role)
		}
		if err := m.Content.Validate(); err != nil {
			return fmt.Errorf("message %d: %v", i, err)
		}
	}
	return nil
}

func unknownPromptError(name string) *mcp.Error {
	msg := fmt.Sprintf("unknown prompt %q", name)
	return &mcp.Error{Code: mcp.CodeInvalidParams, Message: msg,
		Data: &mcp.StructuredError{Code: mcp.ErrNotFound, Message: msg, Details: map[string]any{"prompt": name}}}
}
