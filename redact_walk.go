package keel

import (
	"bytes"
	"encoding"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// walker redacts (and, for the log handler, sanitizes) one value. It works
// in two phases so that nothing is copied unless something changes: needs*
// reports whether a value must be rewritten, without allocating for the
// common shapes; build* rewrites it, asking needs* about every child so that
// unchanged children are shared, not copied.
type walker struct {
	keys     *keySet
	sanitize bool
	n        int
	path     [maxRedactDepth + 2]ident // containers on the current path, for cycles
}

// ident identifies a container: its data pointer, its length and its type.
type ident struct {
	p   uintptr
	n   int
	typ reflect.Type
}

func (w *walker) onPath(id ident) bool {
	for i := 0; i < w.n; i++ {
		if w.path[i] == id {
			return true
		}
	}
	return false
}

func (w *walker) push(id ident) {
	if w.n < len(w.path) {
		w.path[w.n] = id
	}
	w.n++
}

func (w *walker) pop() { w.n-- }

// str sanitizes s when the walker sanitizes.
func (w *walker) str(s string) string {
	if w.sanitize {
		return Sanitize(s)
	}
	return s
}

// keyNeeds reports whether a map key or field name forces a rewrite.
func (w *walker) keyNeeds(k string) bool {
	return w.keys.match(k) || (w.sanitize && needsSanitize(k))
}

var (
	mapAnyType   = reflect.TypeFor[map[string]any]()
	sliceAnyType = reflect.TypeFor[[]any]()
)

func mapIdent(m map[string]any) ident {
	return ident{p: reflect.ValueOf(m).Pointer(), n: len(m), typ: mapAnyType}
}

func sliceIdent(s []any) ident {
	return ident{p: reflect.ValueOf(&s[0]).Pointer(), n: len(s), typ: sliceAnyType}
}

// redactAny returns x rewritten, or x itself and false when nothing changes.
func (w *walker) redactAny(x any, depth int) (any, bool) {
	if !w.needsAny(x, depth) {
		return x, false
	}
	return w.buildAny(x, depth), true
}

func (w *walker) needsAny(x any, depth int) bool {
	switch v := x.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
		float32, float64, time.Time, time.Duration, []byte:
		return false
	case string:
		return w.sanitize && needsSanitize(v)
	case slog.Value, slog.LogValuer:
		return true
	case map[string]any:
		if len(v) == 0 {
			return false
		}
		if depth >= maxRedactDepth {
			return true
		}
		id := mapIdent(v)
		if w.onPath(id) {
			return true
		}
		w.push(id)
		needs := false
		for k, e := range v {
			if w.keyNeeds(k) || w.needsAny(e, depth+1) {
				needs = true
				break
			}
		}
		w.pop()
		return needs
	case []any:
		if len(v) == 0 {
			return false
		}
		if depth >= maxRedactDepth {
			return true
		}
		id := sliceIdent(v)
		if w.onPath(id) {
			return true
		}
		w.push(id)
		needs := false
		for _, e := range v {
			if w.needsAny(e, depth+1) {
				needs = true
				break
			}
		}
		w.pop()
		return needs
	case map[string]string:
		if len(v) > 0 && depth >= maxRedactDepth {
			return true
		}
		for k, e := range v {
			if w.keyNeeds(k) || (w.sanitize && needsSanitize(e)) {
				return true
			}
		}
		return false
	case []string:
		if len(v) > 0 && depth >= maxRedactDepth {
			return true
		}
		if w.sanitize {
			for _, e := range v {
				if needsSanitize(e) {
					return true
				}
			}
		}
		return false
	}
	return w.needsValue(reflect.ValueOf(x), depth)
}

func (w *walker) buildAny(x any, depth int) any {
	switch v := x.(type) {
	case string:
		return w.str(v)
	case slog.Value:
		return w.fromSlog(v, depth)
	case slog.LogValuer:
		return w.fromSlog(slog.AnyValue(v), depth)
	case map[string]any:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		id := mapIdent(v)
		if w.onPath(id) {
			return cycleValue
		}
		w.push(id)
		out := make(map[string]any, len(v))
		for k, e := range v {
			if w.keys.match(k) {
				out[w.str(k)] = RedactedValue
			} else {
				out[w.str(k)], _ = w.redactAny(e, depth+1)
			}
		}
		w.pop()
		return out
	case []any:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		id := sliceIdent(v)
		if w.onPath(id) {
			return cycleValue
		}
		w.push(id)
		out := make([]any, len(v))
		for i, e := range v {
			out[i], _ = w.redactAny(e, depth+1)
		}
		w.pop()
		return out
	case map[string]string:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			if w.keys.match(k) {
				out[w.str(k)] = RedactedValue
			} else {
				out[w.str(k)] = w.str(e)
			}
		}
		return out
	case []string:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = w.str(e)
		}
		return out
	}
	return w.buildValue(reflect.ValueOf(x), depth)
}

// fromSlog turns a slog.Value found inside a map, slice or struct into a plain
// value the next handler can encode: groups become map[string]any.
func (w *walker) fromSlog(v slog.Value, depth int) any {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return w.str(v.String())
	case slog.KindGroup:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		out := make(map[string]any, len(v.Group()))
		w.groupInto(out, v.Group(), depth)
		return out
	case slog.KindAny:
		x, _ := w.redactAny(v.Any(), depth)
		return x
	default:
		return v.Any()
	}
}

func (w *walker) groupInto(out map[string]any, attrs []slog.Attr, depth int) {
	for _, a := range attrs {
		switch {
		case a.Key == "" && a.Value.Kind() == slog.KindGroup:
			w.groupInto(out, a.Value.Group(), depth) // slog inlines groups without a key
		case w.keys.match(a.Key):
			out[w.str(a.Key)] = RedactedValue
		default:
			out[w.str(a.Key)] = w.fromSlog(a.Value, depth+1)
		}
	}
}

// needsValue is needsAny for values reached through reflection.
func (w *walker) needsValue(rv reflect.Value, depth int) bool {
	if !rv.IsValid() {
		return false
	}
	ti := typeInfoOf(rv.Type())
	switch ti.class {
	case classString:
		return w.sanitize && needsSanitize(rv.String())
	case classLogValuer:
		return !isNilRef(rv)
	case classError:
		return w.sanitize && !isNilRef(rv) && rv.CanInterface() && needsSanitize(errorText(rv))
	case classRawJSON:
		if rv.Len() == 0 || !rv.CanInterface() {
			return false
		}
		_, needs := w.rawJSON(rv.Bytes(), false)
		return needs
	case classInterface:
		if rv.IsNil() {
			return false
		}
		return w.needsValue(rv.Elem(), depth)
	case classPointer:
		if rv.IsNil() {
			return false
		}
		if depth >= maxRedactDepth {
			return true
		}
		id := ident{p: rv.Pointer(), typ: rv.Type()}
		if w.onPath(id) {
			return true
		}
		w.push(id)
		needs := w.needsValue(rv.Elem(), depth+1)
		w.pop()
		return needs
	case classMap:
		if rv.Len() == 0 {
			return false
		}
		if depth >= maxRedactDepth {
			return true
		}
		id := ident{p: rv.Pointer(), n: rv.Len(), typ: rv.Type()}
		if w.onPath(id) {
			return true
		}
		w.push(id)
		needs := false
		stringKeys := rv.Type().Key().Kind() == reflect.String
		for it := rv.MapRange(); it.Next(); {
			if (stringKeys && w.keyNeeds(it.Key().String())) || w.needsValue(it.Value(), depth+1) {
				needs = true
				break
			}
		}
		w.pop()
		return needs
	case classSlice, classArray:
		n := rv.Len()
		if n == 0 {
			return false
		}
		if depth >= maxRedactDepth {
			return true
		}
		pushed := ti.class == classSlice
		if pushed {
			id := ident{p: rv.Pointer(), n: n, typ: rv.Type()}
			if w.onPath(id) {
				return true
			}
			w.push(id)
		}
		needs := false
		for i := 0; i < n; i++ {
			if w.needsValue(rv.Index(i), depth+1) {
				needs = true
				break
			}
		}
		if pushed {
			w.pop()
		}
		return needs
	case classStruct:
		if len(ti.fields) == 0 {
			return false
		}
		if depth >= maxRedactDepth {
			return true
		}
		for i := range ti.fields {
			f := &ti.fields[i]
			fv, ok := fieldByIndex(rv, f.index)
			if !ok || (f.omitEmpty && isEmptyValue(fv)) {
				continue
			}
			if w.keyNeeds(f.name) || w.needsValue(fv, depth+1) {
				return true
			}
		}
		return false
	}
	return false
}

// redactValue returns rv as a plain value, rewritten when needed.
func (w *walker) redactValue(rv reflect.Value, depth int) any {
	if !w.needsValue(rv, depth) {
		return interfaceOf(rv)
	}
	return w.buildValue(rv, depth)
}

func (w *walker) buildValue(rv reflect.Value, depth int) any {
	if !rv.IsValid() {
		return nil
	}
	ti := typeInfoOf(rv.Type())
	switch ti.class {
	case classString:
		return w.str(rv.String())
	case classLogValuer:
		if isNilRef(rv) || !rv.CanInterface() {
			return interfaceOf(rv)
		}
		return w.fromSlog(slog.AnyValue(rv.Interface()), depth)
	case classError:
		if isNilRef(rv) || !rv.CanInterface() || !w.sanitize {
			return interfaceOf(rv)
		}
		return Sanitize(errorText(rv))
	case classRawJSON:
		if rv.Len() == 0 || !rv.CanInterface() {
			return interfaceOf(rv)
		}
		out, needs := w.rawJSON(rv.Bytes(), true)
		if !needs {
			return rv.Interface()
		}
		if out == nil {
			return invalidJSONValue
		}
		return reflect.ValueOf(out).Convert(rv.Type()).Interface()
	case classInterface:
		if rv.IsNil() {
			return nil
		}
		return w.redactValue(rv.Elem(), depth)
	case classPointer:
		if rv.IsNil() {
			return interfaceOf(rv)
		}
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		id := ident{p: rv.Pointer(), typ: rv.Type()}
		if w.onPath(id) {
			return cycleValue
		}
		w.push(id)
		out := w.redactValue(rv.Elem(), depth+1)
		w.pop()
		return out
	case classMap:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		id := ident{p: rv.Pointer(), n: rv.Len(), typ: rv.Type()}
		if w.onPath(id) {
			return cycleValue
		}
		w.push(id)
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := mapKeyString(it.Key())
			if w.keys.match(k) {
				out[w.str(k)] = RedactedValue
			} else {
				out[w.str(k)] = w.redactValue(it.Value(), depth+1)
			}
		}
		w.pop()
		return out
	case classSlice, classArray:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		n := rv.Len()
		pushed := ti.class == classSlice
		if pushed {
			id := ident{p: rv.Pointer(), n: n, typ: rv.Type()}
			if w.onPath(id) {
				return cycleValue
			}
			w.push(id)
		}
		out := make([]any, n)
		for i := 0; i < n; i++ {
			out[i] = w.redactValue(rv.Index(i), depth+1)
		}
		if pushed {
			w.pop()
		}
		return out
	case classStruct:
		if depth >= maxRedactDepth {
			return truncatedValue
		}
		out := make(map[string]any, len(ti.fields))
		for i := range ti.fields {
			f := &ti.fields[i]
			fv, ok := fieldByIndex(rv, f.index)
			if !ok || (f.omitEmpty && isEmptyValue(fv)) {
				continue
			}
			if w.keys.match(f.name) {
				out[w.str(f.name)] = RedactedValue
			} else {
				out[w.str(f.name)] = w.redactValue(fv, depth+1)
			}
		}
		return out
	}
	return interfaceOf(rv)
}

// rawJSON redacts member values and sanitizes strings of a JSON text token by
// token, keeping numbers as written. It reports whether anything changes;
// with build it also returns the rewritten text. Text that is not JSON always
// changes, into invalidJSONValue (nil out), since its members cannot be
// checked.
func (w *walker) rawJSON(raw []byte, build bool) (out []byte, needs bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var buf bytes.Buffer
	var enc *jsontext.Encoder
	if build {
		buf.Grow(len(raw))
		enc = jsontext.NewEncoder(&buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	}
	for {
		kind, n := dec.StackIndex(dec.StackDepth())
		isName := kind == '{' && n%2 == 0
		tok, err := dec.ReadToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, true
		}
		if tok.Kind() == '"' {
			s := tok.String()
			if isName && w.keys.match(s) {
				if !build {
					return nil, true
				}
				needs = true
				if enc.WriteToken(jsontext.String(w.str(s))) != nil ||
					enc.WriteToken(jsontext.String(RedactedValue)) != nil ||
					dec.SkipValue() != nil {
					return nil, true
				}
				continue
			}
			if w.sanitize && needsSanitize(s) {
				if !build {
					return nil, true
				}
				needs = true
				tok = jsontext.String(Sanitize(s))
			}
		}
		if build {
			if err := enc.WriteToken(tok); err != nil {
				return nil, true
			}
		}
	}
	if !build || !needs {
		return nil, needs
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), true
}

func isNilRef(rv reflect.Value) bool {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// errorText returns the error's message, or a note when Error panics.
func errorText(rv reflect.Value) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("!PANIC in Error: %v", r)
		}
	}()
	return rv.Interface().(error).Error()
}

// interfaceOf returns rv's value as an interface, also when rv was reached
// through an unexported field (then only its printed form survives).
func interfaceOf(rv reflect.Value) any {
	if !rv.IsValid() {
		return nil
	}
	if rv.CanInterface() {
		return rv.Interface()
	}
	return fmt.Sprint(rv)
}

// mapKeyString renders a map key the way encoding/json names the member.
func mapKeyString(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	if k.CanInterface() {
		if tm, ok := k.Interface().(encoding.TextMarshaler); ok {
			if b, err := tm.MarshalText(); err == nil {
				return string(b)
			}
		}
	}
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10)
	}
	return fmt.Sprint(interfaceOf(k))
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// fieldByIndex follows index like reflect.Value.FieldByIndex, reporting false
// when an embedded pointer on the way is nil.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}
