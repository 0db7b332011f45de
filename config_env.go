package keel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// EnvConfigFile is the environment variable naming the configuration file
// when LoadOptions.File is empty.
const EnvConfigFile = "KEEL_CONFIG"

// envPrefix starts every configuration environment variable.
const envPrefix = "KEEL_"

// decodeConfigFile decodes the JSON file into cfg, strictly.
func decodeConfigFile(file string, cfg *Config) error {
	data, err := os.ReadFile(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &ConfigError{File: file, Message: fmt.Sprintf("cannot read: %v", err)}
	}
	err = json.Unmarshal(data, cfg,
		json.RejectUnknownMembers(true),
		jsontext.AllowDuplicateNames(false),
		jsontext.AllowInvalidUTF8(false),
	)
	if err == nil {
		return nil
	}
	ce := &ConfigError{File: file}
	var se *json.SemanticError
	var ye *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		ce.Field = pointerPath(se.JSONPointer)
		switch {
		case errors.Is(se.Err, json.ErrUnknownName):
			ce.Message = "unknown member"
		case se.GoType != nil && se.JSONKind != 0:
			ce.Message = fmt.Sprintf("cannot use JSON %s as %s", kindName(se.JSONKind), goTypeName(se.GoType))
			if se.JSONValue != nil && !isSecretField(ce.Field) {
				ce.Message = fmt.Sprintf("cannot use JSON %s %s as %s", kindName(se.JSONKind), se.JSONValue, goTypeName(se.GoType))
			}
		case isSecretField(ce.Field):
			ce.Message = "invalid value (not shown: the field is a secret)"
		case se.Err != nil:
			ce.Message = se.Err.Error()
		default:
			ce.Message = se.Error()
		}
	case errors.As(err, &ye) && errors.Is(ye.Err, jsontext.ErrDuplicateName):
		ce.Field = pointerPath(ye.JSONPointer)
		ce.Message = "duplicate member"
	default:
		ce.Message = "invalid JSON: " + err.Error()
	}
	return ce
}

// pointerPath turns a JSON pointer such as /tools/adminPolicy/mode into the
// dotted path tools.adminPolicy.mode (array indexes as [i]).
func pointerPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 {
			fmt.Fprintf(&b, "[%s]", tok)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return k.String()
}

func goTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return t.String()
}

// envField is one configuration field settable from the environment.
type envField struct {
	path   string // JSON path, such as tools.defaultTimeoutMs
	env    string // variable name, such as KEEL_TOOLS_DEFAULT_TIMEOUT_MS
	index  []int  // reflect field index within Config
	kind   reflect.Kind
	secret bool // a Secret: its value is never quoted in an error
}

// isSecretField reports whether the field at path holds a Secret.
func isSecretField(path string) bool {
	for _, f := range envFields() {
		if f.path == path {
			return f.secret
		}
	}
	return false
}

// envFields lists Config's leaf fields with their variables, derived once
// from the json tags: every field is settable, and the names follow the JSON
// path systematically.
var envFields = sync.OnceValue(func() []envField {
	var out []envField
	var walk func(t reflect.Type, path, env string, index []int)
	walk = func(t reflect.Type, path, env string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			p, e := name, envPrefix+upperSnake(name)
			if path != "" {
				p, e = path+"."+name, env+"_"+upperSnake(name)
			}
			idx := append(index[:len(index):len(index)], i)
			if sf.Type.Kind() == reflect.Struct {
				walk(sf.Type, p, e, idx)
				continue
			}
			out = append(out, envField{path: p, env: e, index: idx, kind: sf.Type.Kind(),
				secret: sf.Type == reflect.TypeFor[Secret]()})
		}
	}
	walk(reflect.TypeFor[Config](), "", "", nil)
	return out
})

// upperSnake turns a camelCase JSON name into UPPER_SNAKE_CASE:
// defaultTtlMs → DEFAULT_TTL_MS.
func upperSnake(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' && i > 0 {
			p := s[i-1]
			if ('a' <= p && p <= 'z') || ('0' <= p && p <= '9') {
				b.WriteByte('_')
			}
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// applyEnv sets the fields whose variables are set and returns which
// variable set which field (by JSON path). Every unparsable variable is
// reported, naming the variable and the field.
func applyEnv(cfg *Config, getenv func(string) string) (map[string]string, error) {
	root := reflect.ValueOf(cfg).Elem()
	var set map[string]string
	var errs []error
	for _, f := range envFields() {
		s := getenv(f.env)
		if s == "" {
			continue
		}
		fv := root.FieldByIndex(f.index)
		if msg := setFromEnv(fv, s); msg != "" {
			errs = append(errs, &ConfigError{Field: f.path, Env: f.env, Message: msg})
			continue
		}
		if set == nil {
			set = make(map[string]string)
		}
		set[f.path] = f.env
	}
	return set, errors.Join(errs...)
}

// setFromEnv parses s into fv, returning a message when s is invalid.
func setFromEnv(fv reflect.Value, s string) string {
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Sprintf("invalid boolean %q (want true or false)", s)
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, fv.Type().Bits())
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return fmt.Sprintf("integer %q out of range", s)
			}
			return fmt.Sprintf("invalid integer %q", s)
		}
		fv.SetInt(n)
	case reflect.Slice: // []string: comma-separated
		list := []string{}
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		fv.Set(reflect.ValueOf(list))
	default:
		return fmt.Sprintf("unsupported field kind %s", fv.Kind())
	}
	return ""
}
