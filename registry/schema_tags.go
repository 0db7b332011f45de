package registry

import (
	"fmt"
	"reflect"
	"strings"
)

// schemaTagKeys are the options of a `jsonschema:"..."` struct tag that
// github.com/invopop/jsonschema (v0.14) reads: its Schema.genericKeywords,
// stringKeywords, numericalKeywords, arrayKeywords and booleanKeywords
// (key=value), and reflectFieldName (the bare "required", "nullable", and
// "-" first). It ignores any other option without a word, so a misspelt
// one would vanish from the schema; checkSchemaTags refuses it instead.
var schemaTagKeys = map[string]bool{
	// every type
	"title": true, "description": true, "type": true, "anchor": true,
	"oneof_required": true, "anyof_required": true, "oneof_ref": true,
	"oneof_type": true, "anyof_ref": true, "anyof_type": true,
	// strings
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"readOnly": true, "writeOnly": true, "default": true, "example": true, "enum": true,
	// numbers
	"multipleOf": true, "minimum": true, "maximum": true,
	"exclusiveMaximum": true, "exclusiveMinimum": true,
	// arrays
	"minItems": true, "maxItems": true, "uniqueItems": true,
}

// schemaTagFlags are the options without a value.
var schemaTagFlags = map[string]bool{"required": true, "nullable": true}

// checkSchemaTags reports the first `jsonschema` tag option of a struct
// field reachable from t that invopop/jsonschema does not understand,
// naming the field and the option. Fields the schema leaves out (json:"-",
// jsonschema:"-") and types that describe themselves (JSONSchema) are not
// read, as invopop does not read them.
func checkSchemaTags(t reflect.Type) error {
	return checkTagsOf(t, map[reflect.Type]bool{})
}

func checkTagsOf(t reflect.Type, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || implements(t, jsonSchemaer) {
		return nil
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "-" {
			continue
		}
		tag, ok := f.Tag.Lookup("jsonschema")
		if ok {
			opts := splitTagOptions(tag)
			if len(opts) > 0 && opts[0] == "-" {
				continue
			}
			for _, opt := range opts {
				key, _, hasValue := strings.Cut(opt, "=")
				if opt == "" || (hasValue && schemaTagKeys[key]) || (!hasValue && schemaTagFlags[opt]) {
					continue
				}
				hint := "see the keys of registry.Register's documentation"
				if !hasValue && strings.Contains(tag, "=") {
					hint = `a comma inside a value must be escaped as \,`
				}
				return fmt.Errorf("field %v.%s: jsonschema tag option %q is not one invopop/jsonschema understands (%s)", t, f.Name, opt, hint)
			}
		}
		if err := checkTagsOf(f.Type, seen); err != nil {
			return err
		}
	}
	return nil
}

// splitTagOptions splits a jsonschema tag on the commas that are not
// escaped with a backslash, as invopop does.
func splitTagOptions(tag string) []string {
	var out []string
	start := 0
	for i := 0; i < len(tag); i++ {
		if tag[i] == '\\' {
			i++
			continue
		}
		if tag[i] == ',' {
			out = append(out, tag[start:i])
			start = i + 1
		}
	}
	return append(out, tag[start:])
}
