package mcptest

import (
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/yosida95/uritemplate/v3"
)

// uriTemplateFormat checks the "uri-template" format (resource templates'
// uriTemplate) by parsing RFC 6570, levels 1 to 4. The validator's built-in
// check splits the template like a URL and so refuses valid templates with
// operators such as {?q,lang} and {/path*}; the schemas of 2024-11-05 to
// 2025-06-18 (draft-07) assert formats.
var uriTemplateFormat = &jsonschema.Format{Name: "uri-template", Validate: func(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	_, err := uritemplate.New(s)
	return err
}}
