package keel

import (
	"encoding"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// class says how the walker treats values of one type.
type class uint8

const (
	classLeaf      class = iota // kept as is: numbers, bools, []byte, marshalers, funcs, ...
	classString                 // sanitized
	classLogValuer              // resolved, then walked
	classError                  // its message, sanitized
	classRawJSON                // jsontext.Value, json.RawMessage: rewritten token by token
	classInterface
	classPointer
	classMap
	classSlice
	classArray
	classStruct
)

// typeInfo is what the walker needs to know about a type, computed once per
// type and cached.
type typeInfo struct {
	class  class
	fields []fieldInfo // classStruct: the fields encoding/json would encode
}

// fieldInfo is one encoded struct field.
type fieldInfo struct {
	name      string // JSON member name
	index     []int  // reflect index path (embedded structs flattened)
	omitEmpty bool
}

// jsonMarshaler is encoding/json's Marshaler, which slog.JSONHandler honours.
type jsonMarshaler interface {
	MarshalJSON() ([]byte, error)
}

var (
	typeInfos         sync.Map // reflect.Type → *typeInfo
	logValuerType     = reflect.TypeFor[slog.LogValuer]()
	errorType         = reflect.TypeFor[error]()
	jsonMarshalerType = reflect.TypeFor[jsonMarshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsontextValueType = reflect.TypeFor[jsontext.Value]()
)

func typeInfoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{class: classify(t)}
	if ti.class == classStruct {
		ti.fields = structFields(t)
	}
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

func isRawJSONType(t reflect.Type) bool {
	return t == jsontextValueType || (t.PkgPath() == "encoding/json" && t.Name() == "RawMessage")
}

// marshalsItself reports whether t (or *t) encodes itself for encoding/json.
func marshalsItself(t reflect.Type) bool {
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) {
		return true
	}
	if t.Kind() != reflect.Pointer {
		pt := reflect.PointerTo(t)
		return pt.Implements(jsonMarshalerType) || pt.Implements(textMarshalerType)
	}
	return false
}

func classify(t reflect.Type) class {
	switch {
	case t.Kind() == reflect.Interface:
		return classInterface
	case t.Implements(logValuerType):
		return classLogValuer
	case isRawJSONType(t):
		return classRawJSON
	case t.Implements(errorType):
		return classError
	case marshalsItself(t):
		return classLeaf
	}
	switch t.Kind() {
	case reflect.String:
		return classString
	case reflect.Pointer:
		return classPointer
	case reflect.Map:
		return classMap
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return classLeaf // []byte: base64 for encoding/json, quoted by the text handler
		}
		return classSlice
	case reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 || t.Len() == 0 {
			return classLeaf
		}
		return classArray
	case reflect.Struct:
		return classStruct
	}
	return classLeaf
}

// structFields lists the fields encoding/json encodes for t: exported fields
// under their `json` tag names ("-" skipped), fields of embedded structs
// promoted, a shallower field hiding deeper ones of the same name, and at the
// same depth a tagged field winning over untagged ones (ambiguous names are
// dropped, as encoding/json does).
func structFields(t reflect.Type) []fieldInfo {
	type candidate struct {
		fieldInfo
		tagged bool
	}
	var cands []candidate
	type level struct {
		t     reflect.Type
		index []int
	}
	current := []level{{t: t}}
	visited := map[reflect.Type]bool{}
	for len(current) > 0 {
		var next []level
		for _, lv := range current {
			if visited[lv.t] {
				continue
			}
			visited[lv.t] = true
			for i := 0; i < lv.t.NumField(); i++ {
				sf := lv.t.Field(i)
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				index := append(slices.Clip(lv.index), i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
					if name == "" && ft.Kind() == reflect.Struct {
						next = append(next, level{t: ft, index: index})
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tagged := name != ""
				if name == "" {
					name = sf.Name
				}
				cands = append(cands, candidate{
					fieldInfo: fieldInfo{name: name, index: index, omitEmpty: hasOption(opts, "omitempty")},
					tagged:    tagged,
				})
			}
		}
		current = next
	}
	// Resolve name conflicts: the shallowest depth wins; at equal depth a
	// single tagged field wins; otherwise the name is dropped.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return 0
	})
	var fields []fieldInfo
	for i := 0; i < len(cands); {
		j := i + 1
		for j < len(cands) && cands[j].name == cands[i].name {
			j++
		}
		group := cands[i:j]
		dominant := len(group) == 1 ||
			len(group[1].index) > len(group[0].index) ||
			(group[0].tagged && !group[1].tagged)
		if dominant {
			fields = append(fields, group[0].fieldInfo)
		}
		i = j
	}
	slices.SortFunc(fields, func(a, b fieldInfo) int { return slices.Compare(a.index, b.index) })
	return fields
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}
