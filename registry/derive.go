package registry

import (
	"encoding"
	"encoding/json"
	"fmt"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"net"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/invopop/jsonschema"
)

// deriveSchema reflects t into a JSON Schema (2020-12, no "$schema" member)
// with github.com/invopop/jsonschema and reshapes the result so that:
//
//   - the root is the type's own schema inline (for a struct, "type":
//     "object" with its properties), never a "$ref" into "$defs";
//   - recursive types keep their definition in "$defs" and refer to it, so
//     every reference resolves inside the document;
//   - "$defs" names are plain identifiers, unique even when two packages
//     declare types of the same name;
//   - "$schema" and "$id" are left out;
//   - types with their own JSON encoding (MarshalJSON, MarshalJSONTo,
//     MarshalText) get a schema that does not contradict it;
//   - pointer and interface values that the codec writes as null (members
//     without omitempty/omitzero, slice elements, map values) may be null,
//     so that zero values of output types match their own schema and
//     recursive input types (a *Tree member) can be satisfied.
//
// Reflection happens here, once per registration, never per call.
func deriveSchema(t reflect.Type) (_ jsontext.Value, err error) {
	defer func() {
		if p := recover(); p != nil { // invopop panics on chan, func, complex
			err = fmt.Errorf("cannot derive a JSON Schema from %v: %v", t, p)
		}
	}()
	if err := checkSchemaTags(t); err != nil {
		return nil, err
	}
	n := &namer{byType: map[reflect.Type]string{}, used: map[string]bool{}}
	r := &jsonschema.Reflector{Anonymous: true, Namer: n.name, Mapper: encodedSchema}
	s := r.ReflectFromType(t)
	defs := s.Definitions
	w := &nullWalker{defs: defs, seen: map[*jsonschema.Schema]bool{}}
	w.walk(t, s)
	root := s
	if name, ok := strings.CutPrefix(s.Ref, "#/$defs/"); ok && defs[name] != nil {
		inline := *defs[name]
		root = &inline
		if !refersTo(defs, "#/$defs/"+name) {
			delete(defs, name)
		}
	}
	root.Version, root.ID = "", ""
	root.Definitions = defs
	if len(defs) == 0 {
		root.Definitions = nil
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(b)
	if err := v.Format(); err != nil { // compact, minimal string escapes
		return nil, err
	}
	return v, nil
}

// namer gives every named Go type a "$defs" key made of [A-Za-z0-9_.-]
// (safe in a JSON Pointer and a URI fragment), unique per reflection.
type namer struct {
	byType map[reflect.Type]string
	used   map[string]bool
}

var (
	pkgPathRE = regexp.MustCompile(`[A-Za-z0-9_.\-~]*/`)
	unsafeRE  = regexp.MustCompile(`[^A-Za-z0-9_.\-]+`)
)

func (n *namer) name(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	if s, ok := n.byType[t]; ok {
		return s
	}
	base := pkgPathRE.ReplaceAllString(t.Name(), "") // generic arguments: Page[example.com/x.Item] → Page[x.Item]
	base = strings.Trim(unsafeRE.ReplaceAllString(base, "_"), "_")
	if base == "" {
		base = "T"
	}
	name := base
	for i := 2; n.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	n.used[name] = true
	n.byType[t] = name
	return name
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	urlType       = reflect.TypeFor[url.URL]()
	ipType        = reflect.TypeFor[net.IP]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	jsonSchemaer  = reflect.TypeFor[interface{ JSONSchema() *jsonschema.Schema }]()
	aliasSchemaer = reflect.TypeFor[interface{ JSONSchemaAlias() any }]()
	propSchemaer  = reflect.TypeFor[interface{ JSONSchemaProperty(string) any }]()
	v1Marshaler   = reflect.TypeFor[json.Marshaler]()
	v2Marshaler   = reflect.TypeFor[jsonv2.MarshalerTo]()
	v1Unmarshaler = reflect.TypeFor[json.Unmarshaler]()
	v2Unmarshaler = reflect.TypeFor[jsonv2.UnmarshalerFrom]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || (t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(iface))
}

// schemaProvider reports whether t describes its own schema to invopop.
func schemaProvider(t reflect.Type) bool {
	return implements(t, jsonSchemaer) || implements(t, aliasSchemaer) || implements(t, propSchemaer)
}

// customJSON reports whether the codec encodes t with t's own methods, so
// its Go structure says nothing about its JSON.
func customJSON(t reflect.Type) bool {
	if jsonrpc.FieldShaped(t) {
		return false // its methods write its tagged fields
	}
	return implements(t, v1Marshaler) || implements(t, v2Marshaler) ||
		implements(t, v1Unmarshaler) || implements(t, v2Unmarshaler)
}

// encodedSchema is the invopop Mapper for types with their own encoding: the
// reflected Go structure would describe the wrong JSON, so such values are
// described as "any JSON value", or as a string for text marshalers. Types
// invopop knows (time.Time, url.URL, net.IP) and types that provide their own
// schema keep theirs.
func encodedSchema(t reflect.Type) *jsonschema.Schema {
	switch {
	case t == timeType || t == urlType || t == ipType || t == rawType || schemaProvider(t):
		return nil
	case customJSON(t):
		return &jsonschema.Schema{}
	case implements(t, textMarshaler):
		return &jsonschema.Schema{Type: "string"}
	}
	return nil
}

// opaque reports whether the schema of t was not built from t's structure.
func opaque(t reflect.Type) bool {
	return t == timeType || t == urlType || t == ipType || t == rawType || schemaProvider(t) || customJSON(t) || implements(t, textMarshaler)
}

// nullWalker follows a Go type and its reflected schema side by side and
// lets null through wherever the codec may write null for a nil pointer or
// interface.
type nullWalker struct {
	defs jsonschema.Definitions
	seen map[*jsonschema.Schema]bool
}

func (w *nullWalker) resolve(s *jsonschema.Schema) *jsonschema.Schema {
	for s != nil {
		name, ok := strings.CutPrefix(s.Ref, "#/$defs/")
		if !ok || w.defs[name] == nil {
			return s
		}
		s = w.defs[name]
	}
	return s
}

func (w *nullWalker) walk(t reflect.Type, s *jsonschema.Schema) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s = w.resolve(s)
	if s == nil || w.seen[s] || opaque(t) {
		return
	}
	w.seen[s] = true
	switch t.Kind() {
	case reflect.Struct:
		if s.Properties != nil {
			w.fields(t, s, false)
		}
	case reflect.Slice, reflect.Array:
		if s.Items != nil {
			w.walk(t.Elem(), s.Items)
			if nilable(t.Elem()) {
				s.Items = allowNull(s.Items)
			}
		}
	case reflect.Map:
		for _, sub := range []map[string]*jsonschema.Schema{s.PatternProperties} {
			for k, v := range sub {
				w.walk(t.Elem(), v)
				if nilable(t.Elem()) {
					sub[k] = allowNull(v)
				}
			}
		}
		if s.AdditionalProperties != nil && s.PatternProperties == nil {
			w.walk(t.Elem(), s.AdditionalProperties)
			if nilable(t.Elem()) {
				s.AdditionalProperties = allowNull(s.AdditionalProperties)
			}
		}
	}
}

// fields visits the properties of struct t the way invopop names them.
// Members promoted from an embedded pointer are absent when the pointer is
// nil, so they are not required.
func (w *nullWalker) fields(t reflect.Type, s *jsonschema.Schema, viaPointer bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, embed, omit := fieldName(f)
		if embed {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				w.fields(ft, s, viaPointer || f.Type.Kind() == reflect.Pointer)
			}
			continue
		}
		if name == "" {
			continue
		}
		prop, ok := s.Properties.Get(name)
		if !ok || prop == nil {
			continue
		}
		if viaPointer {
			s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
		}
		w.walk(f.Type, prop)
		if nilable(f.Type) && !omit {
			s.Properties.Set(name, allowNull(prop))
		}
	}
}

// fieldName mirrors invopop's field naming: the JSON name ("" when the field
// is not encoded), whether the field's members are promoted into the parent,
// and whether the field is omitted when empty.
func fieldName(f reflect.StructField) (name string, embed, omit bool) {
	tags := strings.Split(f.Tag.Get("json"), ",")
	if tags[0] == "-" || strings.Split(f.Tag.Get("jsonschema"), ",")[0] == "-" {
		return "", false, false
	}
	for _, o := range tags[1:] {
		switch o {
		case "omitempty", "omitzero":
			omit = true
		case "inline":
			embed = true
		}
	}
	if f.Anonymous && tags[0] == "" {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return "", true, omit
		}
	}
	if embed {
		return "", true, omit
	}
	if !f.Anonymous && f.PkgPath != "" {
		return "", false, omit
	}
	name = f.Name
	if tags[0] != "" {
		name = tags[0]
	}
	return name, false, omit
}

// nilable reports whether a value of type t may encode as null.
func nilable(t reflect.Type) bool {
	return t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface
}

// allowNull returns a schema that accepts what s accepts and null.
// Annotations stay on the outer schema so that they remain visible.
func allowNull(s *jsonschema.Schema) *jsonschema.Schema {
	if acceptsNull(s) {
		return s
	}
	inner := *s
	outer := &jsonschema.Schema{
		Title: inner.Title, Description: inner.Description, Default: inner.Default,
		Examples: inner.Examples, Deprecated: inner.Deprecated, ReadOnly: inner.ReadOnly, WriteOnly: inner.WriteOnly,
	}
	inner.Title, inner.Description, inner.Default, inner.Examples = "", "", nil, nil
	inner.Deprecated, inner.ReadOnly, inner.WriteOnly = false, false, false
	outer.AnyOf = []*jsonschema.Schema{&inner, {Type: "null"}}
	return outer
}

// acceptsNull reports whether s obviously accepts null: it constrains
// nothing, its type is "null", or one of its anyOf/oneOf branches is.
func acceptsNull(s *jsonschema.Schema) bool {
	if s.Type == "null" {
		return true
	}
	for _, b := range append(slices.Clip(s.AnyOf), s.OneOf...) {
		if b != nil && b.Type == "null" {
			return true
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return false
	}
	return string(b) == "true"
}

// refersTo reports whether any schema in defs contains a "$ref" equal to ref.
func refersTo(defs jsonschema.Definitions, ref string) bool {
	seen := map[*jsonschema.Schema]bool{}
	var visit func(*jsonschema.Schema) bool
	visit = func(s *jsonschema.Schema) bool {
		if s == nil || seen[s] {
			return false
		}
		seen[s] = true
		if s.Ref == ref {
			return true
		}
		found := false
		eachSubschema(s, func(sub *jsonschema.Schema) {
			if !found && visit(sub) {
				found = true
			}
		})
		return found
	}
	for _, d := range defs {
		if visit(d) {
			return true
		}
	}
	return false
}

// eachSubschema calls f for every direct subschema of s.
func eachSubschema(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, sub := range list {
			f(sub)
		}
	}
	for _, sub := range []*jsonschema.Schema{s.Not, s.If, s.Then, s.Else, s.Items, s.Contains, s.AdditionalProperties, s.PropertyNames, s.ContentSchema} {
		f(sub)
	}
	for _, m := range []map[string]*jsonschema.Schema{s.DependentSchemas, s.PatternProperties, s.Definitions} {
		for _, sub := range m {
			f(sub)
		}
	}
	if s.Properties != nil {
		for _, sub := range s.Properties.FromOldest() {
			f(sub)
		}
	}
}
