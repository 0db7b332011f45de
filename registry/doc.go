// Package registry is keel's catalog of tools, resources and prompts: it
// holds their definitions, validates arguments and dispatches calls, reads
// and renders.
//
// A tool is registered either with a raw JSON Schema (Registry.AddTool and
// a ToolHandler) or from Go types with the generic Register, which derives
// the input schema from the handler's argument type and, for structured
// results, the output schema from its result type:
//
//	type GreetIn struct {
//		Name string `json:"name" jsonschema:"minLength=1,description=Who to greet"`
//	}
//
//	r := registry.New(nil)
//	registry.MustRegister(r, "greet", "Greets someone.",
//		func(ctx context.Context, in GreetIn) (string, error) {
//			return "Hello, " + in.Name + "!", nil
//		}, nil)
//
// # Schemas
//
// Derived schemas come from github.com/invopop/jsonschema: struct tags such
// as `jsonschema:"minLength=1,maximum=10,enum=a,enum=b,pattern=^x,description=..."`
// add constraints (escape commas inside values as \,), members without
// omitempty are required and unknown members are refused. The root is always
// an inline "type": "object"; recursive types use "$defs"/"$ref" below it.
// Nil pointers and interfaces encode as null, so such members (without
// omitempty) accept null. Schemas carry no "$schema": the dialect is JSON
// Schema 2020-12, the default of MCP 2025-11-25. Arguments are decoded with
// the wire codec, whose member names match case-sensitively.
//
// Every schema, raw or derived, is compiled once at registration with
// github.com/santhosh-tekuri/jsonschema/v6. A raw schema may declare
// draft-07 (or 2019-09, draft-06, draft-04) with "$schema"; any other
// "$schema" is a registration error. References must resolve inside the
// schema: the compiler never fetches anything from the network or the file
// system. A call validates its arguments without compiling anything: a
// pre-check on the token stream accepts valid arguments of the common simple
// schemas without allocating, and the full validator, given the arguments
// decoded once with exact numbers, decides every other case and explains
// every failure.
//
// # Validation errors
//
// Arguments that fail the schema give an INVALID_ARGUMENT
// *mcp.StructuredError whose Details["violations"] is a []Violation listing
// every failed keyword: the JSON Pointer of the offending value ("" is the
// arguments object itself, "/items/0" its first item) and a message.
//
// # Rules enforced at registration
//
//   - tool names have 1 to 128 characters among A-Z a-z 0-9 _ - . (MCP
//     2025-11-25);
//   - input and output schemas have an object root;
//   - registering a tool under a name that is taken is an error
//     (ErrDuplicateTool), also with an identical definition: handlers cannot
//     be compared, so none is kept silently (likewise ErrDuplicateResource
//     and ErrDuplicatePrompt);
//   - _meta keys follow the MCP key rules; keel publishes
//     ToolOptions.DeprecatedIn and Module under MetaDeprecatedIn and
//     MetaModule, and Destructive/ReadOnly as annotation hints.
//
// Errors name the tool and unwrap to an INVALID_ARGUMENT
// *mcp.StructuredError.
//
// # Serving
//
// A Registry is an mcp.ToolSource: ListTools returns the definitions sorted
// by name (cached until the set changes) and CallTool does plain dispatch —
// lookup, argument validation, handler, output validation. The middleware
// package wraps it in the audited call chain; Lookup, Tool.ValidateArguments
// and Tool.Invoke are the pieces that chain uses. Reads never block on
// registrations, and OnChange reports changes to the set (for
// notifications/tools/list_changed).
//
// # Resources
//
// Static resources have fixed contents (AddTextResource, AddBlobResource,
// which base64-encodes once) or a ResourceHandler (AddResource). Resource
// templates (AddResourceTemplate) are RFC 6570 URI templates, levels 1 to 4,
// parsed and compiled once with github.com/yosida95/uritemplate/v3; a read
// of a URI that no static resource has goes to the most specific matching
// template, whose TemplateHandler receives the extracted variables (Vars).
// Reads never scan the templates: a radix tree of their literal prefixes
// yields the few candidates a URI can match. ExpandTemplate goes the other
// way. NotifyResourceUpdated reports changed contents (for
// notifications/resources/updated to subscribers) and OnResourcesChange
// changes to the sets (for notifications/resources/list_changed). A
// Registry is an mcp.ResourceSource, mcp.ResourceChangeNotifier and
// mcp.ResourceUpdateNotifier.
//
// # Prompts
//
// RegisterPrompt derives a prompt's arguments from a struct of string (or
// *string) fields, required unless a pointer or tagged omitempty; AddPrompt
// takes a raw definition. prompts/get checks the arguments (-32602 for a
// missing required one or an unknown one) and the messages the handler
// returns. A Registry is an mcp.PromptSource and mcp.PromptChangeNotifier
// (OnPromptsChange).
//
// # Completion
//
// PromptOptions.Complete and TemplateOptions.Complete attach a Completer to
// prompt arguments and template variables; CompleteFrom offers fixed
// options by prefix. A Registry is an mcp.CompletionSource: at most 100
// values reach the client, with total and hasMore.
package registry
