package registry

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/keelmcp/keel/mcp"
)

// promptField maps one prompt argument to the struct field that receives it.
type promptField struct {
	name    string
	index   int
	pointer bool
}

// derivePromptArgs derives the argument list of a prompt from the struct
// type t (see RegisterPrompt), once, at registration.
func derivePromptArgs(t reflect.Type) ([]mcp.PromptArgument, []promptField, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil, errors.New("prompt arguments come from a struct type")
	}
	var args []mcp.PromptArgument
	var fields []promptField
	seen := map[string]string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			return nil, nil, fmt.Errorf("embedded field %s: not supported in prompt arguments", f.Name)
		}
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := false
		for _, o := range strings.Split(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		pointer := false
		switch {
		case f.Type.Kind() == reflect.String:
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			pointer, optional = true, true
		default:
			return nil, nil, fmt.Errorf("field %s is %v: prompt arguments are strings (use string or *string)", f.Name, f.Type)
		}
		if other, dup := seen[name]; dup {
			return nil, nil, fmt.Errorf("fields %s and %s both name argument %q", other, f.Name, name)
		}
		seen[name] = f.Name
		tags := schemaTag(f.Tag.Get("jsonschema"))
		args = append(args, mcp.PromptArgument{Name: name, Title: tags["title"], Description: tags["description"], Required: !optional})
		fields = append(fields, promptField{name: name, index: i, pointer: pointer})
	}
	return args, fields, nil
}

// schemaTag reads the key=value pairs of a jsonschema struct tag (a comma
// inside a value is escaped as \,).
func schemaTag(tag string) map[string]string {
	out := map[string]string{}
	var cur strings.Builder
	flush := func() {
		if k, v, ok := strings.Cut(cur.String(), "="); ok {
			out[k] = v
		}
		cur.Reset()
	}
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '\\' && i+1 < len(tag) && tag[i+1] == ',':
			cur.WriteByte(',')
			i++
		case tag[i] == ',':
			flush()
		default:
			cur.WriteByte(tag[i])
		}
	}
	flush()
	return out
}

// fillPromptArgs sets the fields of v (a struct) from the arguments.
func fillPromptArgs(v reflect.Value, fields []promptField, args map[string]string) {
	for _, f := range fields {
		s, ok := args[f.name]
		if !ok {
			continue
		}
		fv := v.Field(f.index)
		if f.pointer {
			p := reflect.New(fv.Type().Elem())
			p.Elem().SetString(s)
			fv.Set(p)
		} else {
			fv.SetString(s)
		}
	}
}
