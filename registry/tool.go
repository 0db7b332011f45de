package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
)

// Keys of the keel metadata published in a tool's _meta.
const (
	// MetaDeprecatedIn carries ToolOptions.DeprecatedIn.
	MetaDeprecatedIn = "dev.keel/deprecatedIn"
	// MetaModule carries ToolOptions.Module.
	MetaModule = "dev.keel/module"
)

// MaxToolNameLength is the longest tool name the 2025-11-25 revision allows.
const MaxToolNameLength = 128

// ToolHandler is the raw handler of a tool: it receives the validated raw
// arguments (a JSON object) and returns the result.
//
// Errors follow the mcp.ToolSource conventions: a *mcp.StructuredError (or
// an error wrapping one) becomes an isError result with that code, an
// *mcp.Error becomes a JSON-RPC error response, and any other error becomes
// an INTERNAL isError result.
type ToolHandler func(ctx context.Context, call *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error)

// ToolOptions is a tool's metadata beyond name, description and schemas. The
// zero value (or a nil *ToolOptions) means none.
type ToolOptions struct {
	// Title is the human-friendly name shown by clients (2025-06-18).
	Title string
	// Annotations are behaviour hints for clients; they are copied.
	Annotations *mcp.ToolAnnotations
	// Icons are icons a client may display (2025-11-25); they are copied.
	Icons []mcp.Icon
	// Meta is published as the tool's _meta; keys must follow the MCP
	// _meta key rules. Keel's own keys (MetaDeprecatedIn, MetaModule) are
	// set from the fields below and override same-named entries.
	Meta mcp.Meta

	// Destructive marks a tool that may destroy data; it sets
	// annotations.destructiveHint to true. Leaving it false sets no hint (the
	// MCP default for a tool that is not read-only is "destructive").
	Destructive bool
	// ReadOnly marks a tool that changes nothing; it sets
	// annotations.readOnlyHint to true. It excludes Destructive.
	ReadOnly bool
	// DeprecatedIn is the version in which the tool was deprecated;
	// published in _meta under MetaDeprecatedIn.
	DeprecatedIn string
	// Module is the module or group the tool belongs to; published in
	// _meta under MetaModule.
	Module string
	// Timeout overrides the call chain's default deadline for this tool
	// (0 = the chain default). Used by middleware.Timeout.
	Timeout time.Duration
	// Serial makes calls of this tool run one at a time (middleware.Lock).
	Serial bool
	// TaskSupport is mcp.TaskForbidden, mcp.TaskOptional or
	// mcp.TaskRequired (2025-11-25); "" leaves execution.taskSupport out,
	// which clients read as forbidden.
	TaskSupport string
}

// clone returns a deep copy of the options' reference-typed members.
func (o ToolOptions) clone() ToolOptions {
	o.Annotations = cloneAnnotations(o.Annotations)
	o.Icons = slices.Clone(o.Icons)
	for i := range o.Icons {
		o.Icons[i].Sizes = slices.Clone(o.Icons[i].Sizes)
	}
	o.Meta = maps.Clone(o.Meta)
	return o
}

func cloneAnnotations(a *mcp.ToolAnnotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	c := *a
	for _, p := range []**bool{&c.ReadOnlyHint, &c.DestructiveHint, &c.IdempotentHint, &c.OpenWorldHint} {
		if *p != nil {
			*p = ptr(**p)
		}
	}
	return &c
}

// Tool is a registered tool: its wire definition, options, compiled
// validators and handler. It is immutable and safe for concurrent use.
type Tool struct {
	def     *mcp.Tool
	opts    ToolOptions
	handler ToolHandler
	in      *compiledSchema
	out     *compiledSchema // nil: no outputSchema
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.def.Name }

// Definition returns the wire definition served by tools/list. It is shared;
// do not modify it.
func (t *Tool) Definition() *mcp.Tool { return t.def }

// Options returns a copy of the tool's options.
func (t *Tool) Options() ToolOptions { return t.opts.clone() }

// Timeout returns the tool's deadline override (0 = the chain's default),
// without copying the options.
func (t *Tool) Timeout() time.Duration { return t.opts.Timeout }

// Serial reports whether calls of the tool run one at a time, without
// copying the options.
func (t *Tool) Serial() bool { return t.opts.Serial }

// HasOutputSchema reports whether the tool declares an outputSchema, so that
// its successful results carry structuredContent.
func (t *Tool) HasOutputSchema() bool { return t.out != nil }

// ValidateArguments checks raw arguments against the tool's input schema,
// compiled at registration. Empty args count as {}. It returns nil when they
// are valid, else an INVALID_ARGUMENT StructuredError whose
// Details["violations"] is a []Violation listing every violation with the
// JSON Pointer of the offending value ("" for the arguments object itself).
func (t *Tool) ValidateArguments(args json.RawMessage) *mcp.StructuredError {
	if len(args) == 0 {
		args = json.RawMessage(emptyObject)
	}
	vs, err := t.in.check(args)
	if err != nil {
		return t.argumentsError(err)
	}
	if vs == nil {
		return nil
	}
	return &mcp.StructuredError{
		Code:    mcp.ErrInvalidArgument,
		Message: violationMessage("arguments of tool "+strconv.Quote(t.def.Name)+" do not match its input schema", vs),
		Details: map[string]any{"tool": t.def.Name, "violations": vs},
	}
}

// argumentsError is the INVALID_ARGUMENT error of arguments that could
// not be checked: a number past its bounds (NumberError), or JSON that is
// not valid.
func (t *Tool) argumentsError(err error) *mcp.StructuredError {
	var ne *NumberError
	if errors.As(err, &ne) {
		return &mcp.StructuredError{
			Code:    mcp.ErrInvalidArgument,
			Message: "arguments of tool " + strconv.Quote(t.def.Name) + ": " + ne.Error(),
			Details: map[string]any{"tool": t.def.Name, "limit": ne.Limit, ne.Limit: ne.Max, "path": ne.Path},
		}
	}
	return &mcp.StructuredError{
		Code:    mcp.ErrInvalidArgument,
		Message: fmt.Sprintf("arguments of tool %q are not valid JSON: %v", t.def.Name, err),
		Details: map[string]any{"tool": t.def.Name},
	}
}

var emptyObject = jsontext.Value("{}")

func violationMessage(prefix string, vs []Violation) string {
	v := vs[0]
	path := v.Path
	if path == "" {
		path = "(root)"
	}
	msg := prefix + ": " + path + ": " + v.Message
	if len(vs) > 1 {
		msg += " (and " + strconv.Itoa(len(vs)-1) + " more)"
	}
	return msg
}

// Invoke runs the tool's handler with args, which it does not validate (see
// ValidateArguments), and checks a successful result against the tool's
// outputSchema, if any: a result whose structuredContent is missing or does
// not match is replaced by an INTERNAL StructuredError with Details
// {"reason": "output_schema_mismatch", "violations": [...]}. Errors from the
// handler are returned unchanged.
func (t *Tool) Invoke(ctx context.Context, call *mcp.ToolCall, args json.RawMessage) (*mcp.CallToolResult, error) {
	if len(args) == 0 {
		args = json.RawMessage(emptyObject)
	}
	res, err := t.handler(ctx, call, args)
	if err != nil || t.out == nil || res == nil || res.IsError {
		return res, err
	}
	if se := t.checkOutput(jsontext.Value(res.StructuredContent)); se != nil {
		if call != nil {
			se.CorrelationID, se.RunID = call.CorrelationID, call.RunID
		}
		return nil, se
	}
	return res, nil
}

// checkOutput validates structured content against the output schema.
func (t *Tool) checkOutput(sc jsontext.Value) *mcp.StructuredError {
	var vs []Violation
	if len(sc) == 0 {
		vs = []Violation{{Path: "", Message: "structuredContent is missing but the tool declares an outputSchema"}}
	} else if checked, err := t.out.check(sc); err != nil {
		vs = []Violation{{Path: "", Message: "structuredContent is not valid JSON: " + err.Error()}}
	} else if vs = checked; vs == nil {
		return nil
	}
	return &mcp.StructuredError{
		Code:    mcp.ErrInternal,
		Message: violationMessage("result of tool "+strconv.Quote(t.def.Name)+" does not match its output schema", vs),
		Details: map[string]any{"reason": "output_schema_mismatch", "tool": t.def.Name, "violations": vs},
	}
}

// newTool checks def and opts, compiles the schemas and builds the tool. def
// is not modified.
func newTool(def *mcp.Tool, h ToolHandler, o *ToolOptions) (*Tool, error) {
	if def == nil {
		return nil, errors.New("registry: nil tool definition")
	}
	if err := CheckToolName(def.Name); err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) error {
		return &RegistrationError{Tool: def.Name, Err: fmt.Errorf(format, args...)}
	}
	if h == nil {
		return nil, fail("nil handler")
	}
	var opts ToolOptions
	if o != nil {
		opts = o.clone()
	}
	if opts.Destructive && opts.ReadOnly {
		return nil, fail("options Destructive and ReadOnly exclude each other")
	}
	switch opts.TaskSupport {
	case "", mcp.TaskForbidden, mcp.TaskOptional, mcp.TaskRequired:
	default:
		return nil, fail("TaskSupport %q is not %q, %q or %q", opts.TaskSupport, mcp.TaskForbidden, mcp.TaskOptional, mcp.TaskRequired)
	}

	d := *def
	inText, in, err := compileSchema(jsontext.Value(def.InputSchema))
	if err != nil {
		return nil, fail("inputSchema: %w", err)
	}
	d.InputSchema = json.RawMessage(inText)
	if err := checkParamHeaders(inText); err != nil {
		return nil, fail("inputSchema: %w", err)
	}
	var out *compiledSchema
	if len(def.OutputSchema) > 0 {
		outText, c, err := compileSchema(jsontext.Value(def.OutputSchema))
		if err != nil {
			return nil, fail("outputSchema: %w", err)
		}
		d.OutputSchema, out = json.RawMessage(outText), c
	}

	if opts.Title != "" {
		d.Title = opts.Title
	}
	if len(opts.Icons) > 0 {
		d.Icons = opts.Icons
	} else {
		d.Icons = slices.Clone(d.Icons)
	}
	ann := cloneAnnotations(opts.Annotations)
	if ann == nil {
		ann = cloneAnnotations(d.Annotations)
	}
	if opts.Destructive || opts.ReadOnly {
		if ann == nil {
			ann = new(mcp.ToolAnnotations)
		}
		if opts.Destructive {
			ann.DestructiveHint = ptr(true)
		}
		if opts.ReadOnly {
			ann.ReadOnlyHint = ptr(true)
		}
	}
	d.Annotations = ann
	if opts.TaskSupport != "" {
		d.Execution = &mcp.ToolExecution{TaskSupport: opts.TaskSupport}
	} else if d.Execution != nil {
		e := *d.Execution
		d.Execution = &e
	}
	meta := maps.Clone(d.Meta)
	if len(opts.Meta) > 0 || opts.DeprecatedIn != "" || opts.Module != "" {
		if meta == nil {
			meta = mcp.Meta{}
		}
		maps.Copy(meta, opts.Meta)
		if opts.DeprecatedIn != "" {
			meta[MetaDeprecatedIn] = opts.DeprecatedIn
		}
		if opts.Module != "" {
			meta[MetaModule] = opts.Module
		}
	}
	for k := range meta {
		if !ValidMetaKey(k) {
			return nil, fail("_meta key %q does not follow the MCP _meta key rules", k)
		}
	}
	d.Meta = meta

	if _, err := jsonv2.Marshal(&d); err != nil {
		return nil, fail("definition cannot be encoded: %w", err)
	}
	return &Tool{def: &d, opts: opts, handler: h, in: in, out: out}, nil
}

func ptr[T any](v T) *T { return &v }

// RegistrationError is the error of a registration that was refused: it names
// the tool (or the resource, resource template or prompt: see Kind) and says
// why. It unwraps to an INVALID_ARGUMENT *mcp.StructuredError, so errors.As
// finds the code.
type RegistrationError struct {
	// Tool is the name of the tool, or the URI, URI template or name of
	// what Kind says.
	Tool string
	Err  error
	// Kind is what was registered: "" for a tool, or KindResource,
	// KindResourceTemplate, KindPrompt.
	Kind string
}

// Kinds of registrations other than tools (RegistrationError.Kind).
const (
	KindResource         = "resource"
	KindResourceTemplate = "resource template"
	KindPrompt           = "prompt"
)

func (e *RegistrationError) kind() string {
	if e.Kind == "" {
		return "tool"
	}
	return e.Kind
}

// Error implements error.
func (e *RegistrationError) Error() string {
	return fmt.Sprintf("registry: %s %q: %v", e.kind(), e.Tool, e.Err)
}

// Unwrap returns the cause and an INVALID_ARGUMENT StructuredError whose
// details name what was registered ({"tool": name}, {"resource": uri}, ...).
func (e *RegistrationError) Unwrap() []error {
	key := e.kind()
	if e.Kind == KindResourceTemplate {
		key = "uriTemplate"
	}
	return []error{e.Err, &mcp.StructuredError{
		Code:    mcp.ErrInvalidArgument,
		Message: e.Error(),
		Details: map[string]any{key: e.Tool},
	}}
}

// CheckToolName reports whether name follows the 2025-11-25 tool name rules:
// 1 to 128 characters, each one of A-Z, a-z, 0-9, '_', '-' and '.'. The
// error is a *RegistrationError naming the tool.
func CheckToolName(name string) error {
	if name == "" {
		return &RegistrationError{Tool: name, Err: errors.New("tool name is empty")}
	}
	if len(name) > MaxToolNameLength {
		return &RegistrationError{Tool: name, Err: fmt.Errorf("tool name is %d characters long (at most %d)", len(name), MaxToolNameLength)}
	}
	for i := 0; i < len(name); i++ {
		if !nameChar(name[i]) {
			return &RegistrationError{Tool: name, Err: fmt.Errorf("tool name contains %q at byte %d (allowed: A-Z a-z 0-9 _ - .)", name[i], i)}
		}
	}
	return nil
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// ValidMetaKey reports whether k is a valid MCP _meta key: an optional
// prefix of dot-separated labels followed by '/' (each label starts with a
// letter, ends with a letter or digit, and holds letters, digits and
// hyphens), then a name that is empty or starts and ends with a letter or
// digit and holds letters, digits, '-', '_' and '.'.
func ValidMetaKey(k string) bool {
	name := k
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '/' {
			prefix := k[:i]
			name = k[i+1:]
			if !validMetaPrefix(prefix) {
				return false
			}
			break
		}
	}
	if name == "" {
		return true
	}
	if !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func validMetaPrefix(p string) bool {
	if p == "" {
		return false
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '.' {
			continue
		}
		label := p[start:i]
		if label == "" {
			return false
		}
		first, last := label[0], label[len(label)-1]
		if !(first >= 'a' && first <= 'z' || first >= 'A' && first <= 'Z') || !alnum(last) {
			return false
		}
		for j := 0; j < len(label); j++ {
			if c := label[j]; !alnum(c) && c != '-' {
				return false
			}
		}
		start = i + 1
	}
	return true
}
