package registry

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// A fastSchema checks the common, simple shapes of tool schemas directly on
// the token stream, without building a generic value and without
// allocating. It is a pre-check in front of the full validator: it answers
// "certainly valid" or "don't know", never "invalid". Whenever it is not sure
// — an invalid value, a keyword it does not model, a number it cannot
// compare exactly — the full validator decides and produces the violations.
// So it can only be wrong by saying "valid" about an invalid value; the tests
// and the fuzz target check it against the full validator.
//
// It models a subset of JSON Schema 2020-12 (the default dialect; no
// "$schema" or the 2020-12 one): type, enum of strings, minLength,
// maxLength, pattern, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// properties, required, additionalProperties, items, minItems, maxItems,
// "$ref" to "#/$defs/..." and the nullable form {"anyOf": [S, {"type":
// "null"}]}, plus annotations. A schema using anything else has no
// fastSchema.
type fastSchema struct {
	types  uint8       // allowed JSON types; 0 = all
	never  bool        // the false schema
	orNull *fastSchema // set: null, or whatever orNull accepts (nothing else is set)

	hasEnum bool
	enum    []string
	minLen  int // -1: none
	maxLen  int
	pattern *regexp.Regexp

	min, max, exMin, exMax bound

	props      map[string]*fastSchema
	required   map[string]uint64 // name → bit
	reqMask    uint64
	additional *fastSchema // nil: anything

	items    *fastSchema // nil: anything
	minItems int         // -1: none
	maxItems int
}

const (
	tNull uint8 = 1 << iota
	tBool
	tObject
	tArray
	tNumber
	tInteger
	tString
)

// bound is a numeric limit; set means present.
type bound struct {
	set   bool
	isInt bool
	i     int64
	f     float64
}

// maxExact is the largest magnitude at which every integer is a float64.
const maxExact = 1 << 53

// annotations are keywords that never affect validation (in 2020-12 without
// format or content assertion, which keel does not enable).
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
	"contentEncoding": true, "contentMediaType": true,
}

// fastBuilder turns a decoded schema document into fastSchemas.
type fastBuilder struct {
	defs  map[string]any
	built map[string]*fastSchema
}

// buildFast returns the fast pre-check of a decoded root schema, or nil when
// the schema uses something it does not model.
func buildFast(doc any) *fastSchema {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	if s, ok := root["$schema"]; ok {
		u, _ := s.(string)
		u = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://"), "#")
		if u != "json-schema.org/draft/2020-12/schema" {
			return nil
		}
	}
	b := &fastBuilder{built: map[string]*fastSchema{}}
	if d, ok := root["$defs"]; ok {
		if b.defs, ok = d.(map[string]any); !ok {
			return nil
		}
	}
	s, ok := b.node(root, true)
	if !ok {
		return nil
	}
	return s
}

func (b *fastBuilder) node(v any, root bool) (*fastSchema, bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}, true
		}
		return &fastSchema{never: true}, true
	case map[string]any:
		if ref, ok := v["$ref"]; ok {
			return b.ref(v, ref)
		}
		if any, ok := v["anyOf"]; ok {
			return b.nullable(v, any)
		}
		s := &fastSchema{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
		for k, kv := range v {
			if !b.keyword(s, k, kv, root) {
				return nil, false
			}
		}
		return s, true
	}
	return nil, false
}

// ref handles {"$ref": "#/$defs/name"} with nothing but annotations beside
// it. Definitions are built once and may refer to themselves.
func (b *fastBuilder) ref(v map[string]any, ref any) (*fastSchema, bool) {
	for k := range v {
		if k != "$ref" && !annotations[k] {
			return nil, false
		}
	}
	r, _ := ref.(string)
	name, ok := strings.CutPrefix(r, "#/$defs/")
	if !ok || strings.ContainsAny(name, "/~%") {
		return nil, false
	}
	if s, ok := b.built[name]; ok {
		return s, s != nil
	}
	def, ok := b.defs[name]
	if !ok {
		return nil, false
	}
	s := new(fastSchema)
	b.built[name] = s // before building: the definition may be recursive
	t, ok := b.node(def, false)
	if !ok {
		b.built[name] = nil
		return nil, false
	}
	*s = *t
	return s, true
}

// nullable handles {"anyOf": [S, {"type": "null"}]} (either order) with
// nothing but annotations beside it: S that also accepts null.
func (b *fastBuilder) nullable(v map[string]any, anyOf any) (*fastSchema, bool) {
	for k := range v {
		if k != "anyOf" && !annotations[k] {
			return nil, false
		}
	}
	branches, _ := anyOf.([]any)
	if len(branches) != 2 {
		return nil, false
	}
	isNull := func(x any) bool {
		m, ok := x.(map[string]any)
		return ok && len(m) == 1 && m["type"] == "null"
	}
	var other any
	switch {
	case isNull(branches[1]):
		other = branches[0]
	case isNull(branches[0]):
		other = branches[1]
	default:
		return nil, false
	}
	s, ok := b.node(other, false)
	if !ok {
		return nil, false
	}
	return &fastSchema{orNull: s}, true // s may be a definition still being built
}

func (b *fastBuilder) keyword(s *fastSchema, k string, v any, root bool) bool {
	switch k {
	case "$schema", "$defs":
		return root
	case "type":
		switch t := v.(type) {
		case string:
			s.types = typeBit(t)
			return s.types != 0
		case []any:
			for _, e := range t {
				name, _ := e.(string)
				bit := typeBit(name)
				if bit == 0 {
					return false
				}
				s.types |= bit
			}
			return len(t) > 0
		}
		return false
	case "enum":
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return false
		}
		for _, e := range list {
			str, ok := e.(string)
			if !ok {
				return false
			}
			s.enum = append(s.enum, str)
		}
		s.hasEnum = true
		return true
	case "minLength":
		s.minLen = count(v)
		return s.minLen >= 0
	case "maxLength":
		s.maxLen = count(v)
		return s.maxLen >= 0
	case "minItems":
		s.minItems = count(v)
		return s.minItems >= 0
	case "maxItems":
		s.maxItems = count(v)
		return s.maxItems >= 0
	case "pattern":
		p, ok := v.(string)
		if !ok {
			return false
		}
		re, err := regexp.Compile(p) // the engine the full validator uses
		s.pattern = re
		return err == nil
	case "minimum":
		return s.min.parse(v)
	case "maximum":
		return s.max.parse(v)
	case "exclusiveMinimum":
		return s.exMin.parse(v)
	case "exclusiveMaximum":
		return s.exMax.parse(v)
	case "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		s.props = make(map[string]*fastSchema, len(m))
		for name, sub := range m {
			p, ok := b.node(sub, false)
			if !ok {
				return false
			}
			s.props[name] = p
		}
		return true
	case "required":
		list, ok := v.([]any)
		if !ok || len(list) > 64 {
			return false
		}
		s.required = make(map[string]uint64, len(list))
		for i, e := range list {
			name, ok := e.(string)
			if !ok {
				return false
			}
			if _, dup := s.required[name]; !dup {
				s.required[name] = 1 << i
				s.reqMask |= 1 << i
			}
		}
		return true
	case "additionalProperties":
		p, ok := b.node(v, false)
		s.additional = p
		return ok
	case "items":
		p, ok := b.node(v, false)
		s.items = p
		return ok
	}
	return annotations[k]
}

func typeBit(t string) uint8 {
	switch t {
	case "null":
		return tNull
	case "boolean":
		return tBool
	case "object":
		return tObject
	case "array":
		return tArray
	case "number":
		return tNumber | tInteger
	case "integer":
		return tInteger
	case "string":
		return tString
	}
	return 0
}

// count reads a non-negative integer keyword value, or -1.
func count(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return -1
	}
	i, err := strconv.ParseInt(string(n), 10, 32)
	if err != nil || i < 0 {
		return -1
	}
	return int(i)
}

func (b *bound) parse(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && i > -maxExact && i < maxExact {
		*b = bound{set: true, isInt: true, i: i}
		return true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.Abs(f) >= maxExact {
		return false
	}
	*b = bound{set: true, f: f}
	return true
}

// cmp compares the exact integer x with the bound: -1, 0 or +1. For a
// fractional bound, x (an integer below 2^53) and the float64 nearest the
// bound's decimal compare like x and the decimal itself, since rounding
// below 2^53 never crosses an integer.
func (b *bound) cmp(x int64) int {
	if b.isInt {
		switch {
		case x < b.i:
			return -1
		case x > b.i:
			return 1
		}
		return 0
	}
	switch fx := float64(x); {
	case fx < b.f:
		return -1
	case fx > b.f:
		return 1
	}
	return 0
}

// valid reports whether raw is certainly valid. false means "let the full
// validator decide".
func (s *fastSchema) valid(raw []byte) bool {
	d := instanceDecoders.Get().(*instanceDecoder)
	d.buf.Reset()
	d.buf.Write(raw)
	d.dec.Reset(&d.buf)
	ok := s.check(d.dec)
	if ok {
		_, err := d.dec.ReadToken()
		ok = err == io.EOF
	}
	if d.buf.Cap() <= maxPooledBuffer {
		d.buf.Reset()
		instanceDecoders.Put(d)
	}
	return ok
}

func (s *fastSchema) allows(t uint8) bool { return s.types == 0 || s.types&t != 0 }

func (s *fastSchema) check(d *jsontext.Decoder) bool {
	if s.orNull != nil {
		if d.PeekKind() == 'n' {
			_, err := d.ReadToken()
			return err == nil
		}
		return s.orNull.check(d)
	}
	if s.never {
		return false
	}
	switch d.PeekKind() {
	case 'n':
		if !s.allows(tNull) || s.hasEnum {
			return false
		}
		_, err := d.ReadToken()
		return err == nil
	case 't', 'f':
		if !s.allows(tBool) || s.hasEnum {
			return false
		}
		_, err := d.ReadToken()
		return err == nil
	case '"':
		if !s.allows(tString) {
			return false
		}
		raw, err := d.ReadValue() // valid until the next read
		if err != nil {
			return false
		}
		str := []byte(raw[1 : len(raw)-1])
		if bytes.IndexByte(str, '\\') >= 0 {
			if str, err = jsontext.AppendUnquote(nil, raw); err != nil {
				return false
			}
		}
		return s.checkString(str)
	case '0':
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		return s.checkNumber(tok.String())
	case '{':
		if !s.allows(tObject) || s.hasEnum {
			return false
		}
		return s.checkObject(d)
	case '[':
		if !s.allows(tArray) || s.hasEnum {
			return false
		}
		return s.checkArray(d)
	}
	return false
}

func (s *fastSchema) checkString(str []byte) bool {
	if s.minLen >= 0 || s.maxLen >= 0 {
		n := utf8.RuneCount(str)
		if s.minLen >= 0 && n < s.minLen || s.maxLen >= 0 && n > s.maxLen {
			return false
		}
	}
	if s.hasEnum {
		found := false
		for _, e := range s.enum {
			if e == string(str) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return s.pattern == nil || s.pattern.Match(str)
}

// checkNumber handles integer literals below 2^53 exactly; any other number
// is certain only when nothing constrains it beyond the "number" type.
func (s *fastSchema) checkNumber(text string) bool {
	if s.hasEnum || checkNumber(text) != nil { // the full check refuses it
		return false
	}
	x, isInt := parseSmallInt(text)
	if !isInt {
		if s.min.set || s.max.set || s.exMin.set || s.exMax.set {
			return false
		}
		return s.types == 0 || s.types&tNumber != 0 // "integer" alone: 1.0 is one, 1.5 is not
	}
	if !s.allows(tInteger) {
		return false
	}
	return (!s.min.set || s.min.cmp(x) >= 0) && (!s.max.set || s.max.cmp(x) <= 0) &&
		(!s.exMin.set || s.exMin.cmp(x) > 0) && (!s.exMax.set || s.exMax.cmp(x) < 0)
}

// parseSmallInt parses a JSON number written as an integer of at most 15
// digits (well below 2^53).
func parseSmallInt(text string) (int64, bool) {
	neg := strings.HasPrefix(text, "-")
	if neg {
		text = text[1:]
	}
	if text == "" || len(text) > 15 {
		return 0, false
	}
	var x int64
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int64(c-'0')
	}
	if neg {
		x = -x
	}
	return x, true
}

func (s *fastSchema) checkObject(d *jsontext.Decoder) bool {
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	var seen uint64
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return false
		}
		name := tok.String()
		seen |= s.required[name]
		sub, declared := s.props[name]
		switch {
		case declared:
			if !sub.check(d) {
				return false
			}
		case s.additional != nil:
			if !s.additional.check(d) {
				return false
			}
		default:
			if !skipValue(d) {
				return false
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	return seen&s.reqMask == s.reqMask
}

func (s *fastSchema) checkArray(d *jsontext.Decoder) bool {
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	n := 0
	for d.PeekKind() != ']' {
		n++
		if s.items != nil {
			if !s.items.check(d) {
				return false
			}
		} else if !skipValue(d) {
			return false
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	return (s.minItems < 0 || n >= s.minItems) && (s.maxItems < 0 || n <= s.maxItems)
}

// skipValue skips the next value, which no schema constrains; false when
// it is malformed or holds a number past MaxNumberDigits or
// MaxNumberExponent, so that the full check reports it: a handler never
// receives such a number, wherever it stands.
func skipValue(d *jsontext.Decoder) bool {
	depth := 0
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		switch tok.Kind() {
		case '0':
			if checkNumber(tok.String()) != nil {
				return false
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}
