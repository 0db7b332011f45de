package jsonrpc

import (
	"errors"
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DescribeDecodeError describes, in JSON terms, why params did not decode
// into their Go type: where (a JSON pointer from the root of params) and
// what was wanted and found. The decoder's own message names Go types, and
// go-json-experiment/json deliberately varies its wording from process to
// process ("cannot" / "unable to"), so its text is never used. It is the
// text after "Invalid params: " of every -32602 answer.
func DescribeDecodeError(err error) string {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return "malformed params"
	}
	where := "params"
	if se.JSONPointer != "" {
		where = strconv.Quote(string(se.JSONPointer))
	}
	if se.Err != nil {
		var inner *json.SemanticError
		if !errors.As(se.Err, &inner) {
			return where + ": " + se.Err.Error()
		}
	}
	want, got := jsonTypeOf(se.GoType), jsonKindName(se.JSONKind)
	switch {
	case want != "" && got != "":
		return where + " must be " + want + ", not " + got
	case want != "":
		return where + " must be " + want
	}
	return "invalid value at " + where
}

// jsonTypeOf names the JSON type a Go type decodes from ("" if unknown).
func jsonTypeOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return ""
}

// jsonKindName names a JSON kind with its article ("" if unknown).
func jsonKindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{', '}':
		return "an object"
	case '[', ']':
		return "an array"
	}
	return ""
}
