package registry

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Violation is one way a JSON value fails its schema: Path is the JSON
// Pointer (RFC 6901) of the offending value inside the instance ("" for the
// instance itself, "/items/0/name" for a nested member) and Message says what
// is wrong. Validation failures list every violation in
// StructuredError.Details["violations"] as a []Violation.
type Violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// schemaURL is where a tool's schema lives while it is compiled. Every schema
// gets its own compiler, so one fixed location is enough.
const schemaURL = "keel:///schema.json"

// errNoFetch is what the loader answers for every URL: keel never reads a
// schema from the network or the file system.
var errNoFetch = errors.New("keel does not load external schemas (only the standard meta-schemas are built in)")

// refusingLoader is the santhosh-tekuri URLLoader that loads nothing. The
// standard meta-schemas (draft-04, -06, -07, 2019-09, 2020-12) are embedded
// in the library and never reach the loader.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) { return nil, errNoFetch }

// compiledSchema is a schema compiled once, at registration.
type compiledSchema struct {
	sch  *jsonschema.Schema
	fast *fastSchema // nil: the schema is outside the fast pre-check's subset
}

// check validates raw JSON: the fast pre-check first, then, unless it is
// certain that raw is valid, the full validator. err reports raw that is not
// valid JSON (duplicate names and invalid UTF-8 included).
func (c *compiledSchema) check(raw []byte) ([]Violation, error) {
	if c.fast != nil && c.fast.valid(raw) {
		return nil, nil
	}
	v, err := decodeInstance(raw)
	if err != nil {
		return nil, err
	}
	return c.validate(v), nil
}

// compileSchema checks that raw is a JSON object whose root "type" is
// "object" and compiles it. The dialect is 2020-12 unless "$schema" names
// another one the validator knows (draft-04, -06, -07, 2019-09); any other
// "$schema" fails to compile, as does any reference outside the document.
// It returns the compacted schema text along with the validator.
func compileSchema(raw jsontext.Value) (jsontext.Value, *compiledSchema, error) {
	if len(raw) == 0 {
		return nil, nil, errors.New("schema is missing")
	}
	text := slices.Clone(raw)
	if err := text.Format(); err != nil { // compact; rejects duplicate names and invalid UTF-8
		return nil, nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	doc, err := decodeInstance(text)
	if err != nil {
		return nil, nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, errors.New(`schema root must be a JSON object with "type": "object"`)
	}
	if t, _ := obj["type"].(string); t != "object" {
		return nil, nil, fmt.Errorf(`schema root must have "type": "object" (got %s)`, describeType(obj["type"]))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, nil, fmt.Errorf("schema does not compile: %w", err)
	}
	return text, &compiledSchema{sch: sch, fast: buildFast(doc)}, nil
}

func describeType(v any) string {
	switch v := v.(type) {
	case nil:
		return "none"
	case string:
		return fmt.Sprintf("%q", v)
	default:
		return fmt.Sprintf("%v", v)
	}
}

// validate checks a decoded instance and returns every violation, sorted by
// path then message (the validator walks maps in random order).
func (c *compiledSchema) validate(v any) []Violation {
	err := c.sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Path: "", Message: err.Error()}}
	}
	var out []Violation
	collectViolations(ve, &out)
	if len(out) == 0 { // cannot happen: a failed validation has at least one leaf
		out = append(out, Violation{Path: "", Message: ve.Error()})
	}
	slices.SortFunc(out, func(a, b Violation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.CompactFunc(out, func(a, b Violation) bool { return a == b })
}

var printer = message.NewPrinter(language.English)

// collectViolations appends the leaves of the error tree: the errors without
// causes, each one concrete keyword that failed.
//
// Under anyOf and oneOf every branch failed; a branch that failed only
// because the value has another type (such as the {"type": "null"} branch
// of a nullable member) says less than one that failed deeper inside the
// value, so when both kinds are present only the latter are listed. When
// every branch is a plain type mismatch they become one violation listing
// the accepted types.
func collectViolations(e *jsonschema.ValidationError, out *[]Violation) {
	if len(e.Causes) == 0 {
		*out = append(*out, Violation{Path: jsonPointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)})
		return
	}
	causes := e.Causes
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		var deeper []*jsonschema.ValidationError
		var types *kind.Type
		for _, c := range causes {
			if t := typeMismatch(c, len(e.InstanceLocation)); t != nil {
				if types == nil {
					types = &kind.Type{Got: t.Got}
				}
				for _, w := range t.Want {
					if !slices.Contains(types.Want, w) {
						types.Want = append(types.Want, w)
					}
				}
				continue
			}
			deeper = append(deeper, c)
		}
		if len(deeper) == 0 && types != nil {
			*out = append(*out, Violation{Path: jsonPointer(e.InstanceLocation), Message: types.LocalizedString(printer)})
			return
		}
		causes = deeper
	}
	for _, c := range causes {
		collectViolations(c, out)
	}
}

// typeMismatch returns the type error e amounts to when e is nothing but a
// type mismatch of the value at depth, else nil.
func typeMismatch(e *jsonschema.ValidationError, depth int) *kind.Type {
	for len(e.Causes) == 1 {
		e = e.Causes[0]
	}
	if len(e.Causes) != 0 || len(e.InstanceLocation) != depth {
		return nil
	}
	t, _ := e.ErrorKind.(*kind.Type)
	return t
}

// jsonPointer joins reference tokens into an RFC 6901 JSON Pointer ("" for
// the root).
func jsonPointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, tok := range tokens {
		sb.WriteByte('/')
		if strings.ContainsAny(tok, "~/") {
			tok = strings.ReplaceAll(tok, "~", "~0")
			tok = strings.ReplaceAll(tok, "/", "~1")
		}
		sb.WriteString(tok)
	}
	return sb.String()
}
