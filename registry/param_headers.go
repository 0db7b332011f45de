package registry

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// An input property annotated with "x-mcp-header" (SEP-2243, revision
// 2026-07-28) is mirrored by HTTP clients into the request header
// Mcp-Param-{Name}, so that intermediaries can route on it. Clients drop a
// tool whose annotations are invalid, so keel refuses it at registration:
// the value must be a non-empty HTTP token, unique among the tool's
// annotations (header names are case-insensitive), on a property of type
// string, integer or boolean that is reached from the root through
// "properties" only.

// checkParamHeaders reports the first invalid x-mcp-header annotation of
// an input schema.
func checkParamHeaders(schema jsontext.Value) error {
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil // compileSchema reports it
	}
	seen := map[string]string{}
	return walkParamHeaders(root, "", true, seen)
}

// walkParamHeaders visits every schema object below v (at JSON pointer
// at); onPath says whether v is the root or reached through "properties"
// only.
func walkParamHeaders(v any, at string, onPath bool, seen map[string]string) error {
	switch n := v.(type) {
	case map[string]any:
		if h, ok := n["x-mcp-header"]; ok {
			if err := checkParamHeader(n, h, at, onPath, seen); err != nil {
				return err
			}
		}
		for k, child := range n {
			childOnPath := false
			if k == "properties" && onPath {
				if props, ok := child.(map[string]any); ok {
					for name, p := range props {
						if err := walkParamHeaders(p, at+"/properties/"+escapePointer(name), true, seen); err != nil {
							return err
						}
					}
					continue
				}
			}
			if err := walkParamHeaders(child, at+"/"+escapePointer(k), childOnPath, seen); err != nil {
				return err
			}
		}
	case []any:
		for i, child := range n {
			if err := walkParamHeaders(child, fmt.Sprintf("%s/%d", at, i), false, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkParamHeader(prop map[string]any, h any, at string, onPath bool, seen map[string]string) error {
	where := at
	if where == "" {
		where = "the root"
	}
	name, ok := h.(string)
	switch {
	case !onPath || at == "":
		return fmt.Errorf("x-mcp-header at %s: only a property reached through \"properties\" may carry it", where)
	case !ok || name == "":
		return fmt.Errorf("x-mcp-header at %s: want a non-empty string", where)
	case !isToken(name):
		return fmt.Errorf("x-mcp-header at %s: %q is not an HTTP header token", where, name)
	}
	switch t, _ := prop["type"].(string); t {
	case "string", "integer", "boolean":
	default:
		return fmt.Errorf("x-mcp-header at %s: the property's type must be string, integer or boolean", where)
	}
	key := strings.ToLower(name)
	if other, dup := seen[key]; dup {
		return fmt.Errorf("x-mcp-header %q at %s: already used at %s", name, where, other)
	}
	seen[key] = at
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 tchar+).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
