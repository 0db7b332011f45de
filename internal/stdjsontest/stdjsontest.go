// Package stdjsontest checks that protocol types encode and decode to the
// same wire form with the standard library's encoding/json as with keel's
// own codec (the one internal/jsonrpc writes messages with). Tests of the
// public packages use it over every exported type that has a JSON form.
package stdjsontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// Check requires Compare(v) to find no difference.
func Check(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, Compare(v))
}

// Compare encodes v (a value, not a pointer) with keel's codec and with
// encoding/json and reports the first difference: other bytes
// (encoding/json escapes <, > and & for HTML; the comparison applies the
// same escaping to keel's bytes), a value one refuses and the other does
// not, or, decoding keel's bytes with both into fresh values of v's type,
// values that differ or do not encode back to the same bytes.
func Compare(v any) error {
	keel, keelErr := jsonrpc.Marshal(v)
	std, stdErr := json.Marshal(v)
	switch {
	case keelErr != nil && stdErr != nil:
		return nil // refused by both (a content block of no known type)
	case keelErr != nil:
		return fmt.Errorf("keel refuses %#v (%v); encoding/json writes %s", v, keelErr, std)
	case stdErr != nil:
		return fmt.Errorf("encoding/json refuses %#v (%v); keel writes %s", v, stdErr, keel)
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, keel)
	if esc.String() != string(std) {
		return fmt.Errorf("%T: encoding/json writes\n\t%s\nkeel writes\n\t%s", v, std, esc.Bytes())
	}
	typ := reflect.TypeOf(v)
	viaKeel, viaStd := reflect.New(typ), reflect.New(typ)
	if err := jsonrpc.Unmarshal(keel, viaKeel.Interface()); err != nil {
		return fmt.Errorf("keel cannot decode its own %s: %w", keel, err)
	}
	if err := json.Unmarshal(keel, viaStd.Interface()); err != nil {
		return fmt.Errorf("encoding/json cannot decode keel's %s: %w", keel, err)
	}
	if !reflect.DeepEqual(viaKeel.Elem().Interface(), viaStd.Elem().Interface()) {
		return fmt.Errorf("%s decodes to\n\t%#v with keel and\n\t%#v with encoding/json", keel, viaKeel.Elem().Interface(), viaStd.Elem().Interface())
	}
	if again, err := jsonrpc.Marshal(viaStd.Elem().Interface()); err != nil || string(again) != string(keel) {
		return fmt.Errorf("what encoding/json decoded from %s encodes back to %s (%v)", keel, again, err)
	}
	if again, err := json.Marshal(viaKeel.Elem().Interface()); err != nil || string(again) != string(std) {
		return fmt.Errorf("what keel decoded from %s encodes back with encoding/json to %s (%v)", keel, again, err)
	}
	return nil
}

// Filled returns a value of type T with every exported field set (recursing
// into structs, pointers, slices and maps to a small depth), so that no
// member is left out by omitempty or omitzero. A type found in overrides is
// given that value instead (for types whose fields must agree, such as a
// content block and its type).
func Filled[T any](overrides map[reflect.Type]any) T {
	var zero T
	return fill(reflect.TypeOf(zero), overrides, 0).Interface().(T)
}

// FilledValue is Filled for a type known at run time.
func FilledValue(t reflect.Type, overrides map[reflect.Type]any) any {
	return fill(t, overrides, 0).Interface()
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
)

const maxDepth = 4

func fill(t reflect.Type, overrides map[reflect.Type]any, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	if o, ok := overrides[t]; ok {
		v.Set(reflect.ValueOf(o))
		return v
	}
	if depth > maxDepth {
		return v
	}
	switch {
	case t == rawMessageType || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && t.Name() == "Value"):
		v.SetBytes([]byte(`{"a":[1,"x"]}`))
		return v
	case t == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 7, 28, 12, 30, 45, 123000000, time.UTC)))
		return v
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString("s<&>é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		v.Set(fill(t.Elem(), overrides, depth+1).Addr())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("ab"))
			break
		}
		s := reflect.MakeSlice(t, 1, 1)
		s.Index(0).Set(fill(t.Elem(), overrides, depth+1))
		v.Set(s)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		m := reflect.MakeMap(t)
		k := reflect.New(t.Key()).Elem()
		k.SetString("k")
		m.SetMapIndex(k, fill(t.Elem(), overrides, depth+1))
		v.Set(m)
	case reflect.Interface:
		if t.NumMethod() == 0 {
			v.Set(reflect.ValueOf("v"))
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			switch f.Type.Kind() {
			case reflect.Func, reflect.Chan, reflect.UnsafePointer:
				continue
			}
			v.Field(i).Set(fill(f.Type, overrides, depth+1))
		}
	}
	return v
}

// WireTypes returns the names of the exported types declared in the non-test
// files of the package in dir that have a JSON form keel defines: struct
// types with a json tag on a field, and types with a marshalWire method.
// A test compares it with its table so that a new type cannot be left out.
func WireTypes(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					for _, s := range d.Specs {
						ts, ok := s.(*ast.TypeSpec)
						if !ok || !ts.Name.IsExported() {
							continue
						}
						if st, ok := ts.Type.(*ast.StructType); ok && hasJSONTag(st) {
							seen[ts.Name.Name] = true
						}
					}
				case *ast.FuncDecl:
					if d.Recv == nil || d.Name.Name != "marshalWire" {
						continue
					}
					if name := recvName(d.Recv.List[0].Type); ast.IsExported(name) {
						seen[name] = true
					}
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func hasJSONTag(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if f.Tag != nil && strings.Contains(f.Tag.Value, `json:"`) {
			return true
		}
	}
	return false
}

func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// CheckAll runs Check, as a subtest per type, over each value of zeros (the
// zero values of a package's types) and over the same type with every field
// set (Filled, with overrides).
func CheckAll(t *testing.T, zeros []any, overrides map[reflect.Type]any) {
	t.Helper()
	for _, zero := range zeros {
		typ := reflect.TypeOf(zero)
		t.Run(typ.Name()+"/zero", func(t *testing.T) { Check(t, zero) })
		t.Run(typ.Name()+"/filled", func(t *testing.T) { Check(t, FilledValue(typ, overrides)) })
	}
}

// RequireCovers requires zeros to hold exactly one value of each type
// WireTypes finds in dir, so that a type added to the package without a
// row in its table fails the test.
func RequireCovers(t *testing.T, dir string, zeros []any) {
	t.Helper()
	listed := make([]string, 0, len(zeros))
	for _, v := range zeros {
		listed = append(listed, reflect.TypeOf(v).Name())
	}
	sort.Strings(listed)
	require.Equal(t, WireTypes(t, dir), listed)
}
