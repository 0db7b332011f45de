package mcptest

import (
	"bytes"
	"embed"
	jsonv1 "encoding/json" // the validator's instances hold jsonv1.Number
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The official MCP schemas, one per revision (see schema/README.md).
//
//go:embed schema/*/schema.json
var schemaFS embed.FS

// LatestRevision is the newest embedded revision: the one a transcript
// assumes before initialize has been answered.
const LatestRevision = "2025-11-25"

// Revisions lists the protocol revisions whose schemas are embedded, oldest
// first. The last, 2026-07-28, is stateless ("modern"): it is never
// negotiated by initialize, and its messages get the extra checks of
// schema_modern.go.
var Revisions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", RevisionModern}

// ResultDefinitions maps each request method a server answers to the schema
// definition of its result. A tools/call result holding "task" is checked
// against CreateTaskResult instead (2025-11-25 task-augmented calls); in
// 2026-07-28 a result is checked by its resultType (see schema_modern.go).
var ResultDefinitions = map[string]string{
	"server/discover":          "DiscoverResult",
	"subscriptions/listen":     "SubscriptionsListenResult",
	"initialize":               "InitializeResult",
	"ping":                     "EmptyResult",
	"tools/list":               "ListToolsResult",
	"tools/call":               "CallToolResult",
	"resources/list":           "ListResourcesResult",
	"resources/templates/list": "ListResourceTemplatesResult",
	"resources/read":           "ReadResourceResult",
	"resources/subscribe":      "EmptyResult",
	"resources/unsubscribe":    "EmptyResult",
	"prompts/list":             "ListPromptsResult",
	"prompts/get":              "GetPromptResult",
	"completion/complete":      "CompleteResult",
	"logging/setLevel":         "EmptyResult",
	"tasks/get":                "GetTaskResult",
	"tasks/result":             "GetTaskPayloadResult",
	"tasks/cancel":             "CancelTaskResult",
	"tasks/list":               "ListTasksResult",
}

// Envelope definitions, whose names differ between revisions: 2025-11-25
// has JSONRPCResultResponse, JSONRPCErrorResponse and Error; the older
// revisions JSONRPCResponse, JSONRPCError and an inline error object.
const (
	defResultResponse = "@resultResponse"
	defErrorResponse  = "@errorResponse"
	defErrorObject    = "@error"
)

// envelopeDefs are the other definitions every revision has.
var envelopeDefs = []string{"JSONRPCRequest", "JSONRPCNotification", "ServerRequest", "ServerNotification", "Result", "JSONRPCBatchResponse"}

// revision is one embedded schema, compiled once.
type revision struct {
	name   string
	once   sync.Once
	err    error
	plain  map[string]*jsonschema.Schema // the official schema, by definition
	strict map[string]*jsonschema.Schema // the same with undeclared members rejected
	// bareBodies: the request and notification definitions (PingRequest,
	// ...) lack the envelope members jsonrpc and id (before 2025-11-25).
	bareBodies bool
	// modern: a stateless revision (2026-07-28), which has resultType,
	// input-required results and no server-to-client requests.
	modern bool
}

var revisions = func() map[string]*revision {
	m := make(map[string]*revision, len(Revisions))
	for _, r := range Revisions {
		m[r] = &revision{name: r}
	}
	return m
}()

func loadRevision(rev string) (*revision, error) {
	r, ok := revisions[rev]
	if !ok {
		return nil, fmt.Errorf("mcptest: no schema for protocol revision %q (have %s)", rev, strings.Join(Revisions, ", "))
	}
	r.once.Do(r.compile)
	return r, r.err
}

// noNetwork refuses every URL the compiler would load: the MCP schemas
// reference nothing outside themselves, and meta-schemas are built in.
type noNetwork struct{}

func (noNetwork) Load(url string) (any, error) {
	return nil, fmt.Errorf("mcptest: refusing to load %s (no network access in tests)", url)
}

func (r *revision) compile() {
	raw, err := schemaFS.ReadFile("schema/" + r.name + "/schema.json")
	if err != nil {
		r.err = err
		return
	}
	r.modern = r.name == RevisionModern
	r.plain, r.bareBodies, r.err = compileDefs(r.name, raw, false)
	if r.err == nil {
		r.strict, _, r.err = compileDefs(r.name, raw, true)
	}
}

func compileDefs(rev string, raw []byte, strict bool) (_ map[string]*jsonschema.Schema, bareBodies bool, _ error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, false, fmt.Errorf("mcptest: schema %s: %w", rev, err)
	}
	root := doc.(map[string]any)
	defsKey := "definitions"
	if _, ok := root["$defs"]; ok {
		defsKey = "$defs"
	}
	defs := root[defsKey].(map[string]any)
	// Every revision has ToolListChangedNotification (2026-07-28 has no PingRequest).
	probe, _ := defs["ToolListChangedNotification"].(map[string]any)
	probeProps, _ := probe["properties"].(map[string]any)
	_, hasEnvelope := probeProps["jsonrpc"]
	if strict {
		strictify(root, defsKey)
	}
	url := "https://schemas.keel.invalid/mcp/" + rev + "/schema.json"
	c := jsonschema.NewCompiler()
	c.RegisterFormat(uriTemplateFormat) // RFC 6570 levels 1-4 (uritemplate_format.go)
	c.UseLoader(noNetwork{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, false, err
	}
	locs := map[string]string{}
	for _, name := range envelopeDefs {
		locs[name] = name
	}
	for _, name := range ResultDefinitions {
		locs[name] = name
	}
	for _, name := range modernDefs {
		locs[name] = name
	}
	locs["CreateTaskResult"] = "CreateTaskResult"
	locs[defResultResponse] = firstDef(defs, "JSONRPCResultResponse", "JSONRPCResponse")
	locs[defErrorResponse] = firstDef(defs, "JSONRPCErrorResponse", "JSONRPCError")
	locs[defErrorObject] = firstDef(defs, "Error", "JSONRPCError/properties/error")
	out := make(map[string]*jsonschema.Schema, len(locs))
	for key, def := range locs {
		if def == "" {
			continue
		}
		if _, ok := defs[strings.SplitN(def, "/", 2)[0]]; !ok {
			continue // a definition this revision lacks (e.g. tasks before 2025-11-25)
		}
		sch, err := c.Compile(url + "#/" + defsKey + "/" + def)
		if err != nil {
			return nil, false, fmt.Errorf("mcptest: compiling %s of %s: %w", def, rev, err)
		}
		out[key] = sch
	}
	return out, !hasEnvelope, nil
}

func firstDef(defs map[string]any, names ...string) string {
	for _, n := range names {
		if _, ok := defs[strings.SplitN(n, "/", 2)[0]]; ok {
			return n
		}
	}
	return ""
}

// Members whose value is an arbitrary JSON Schema or an arbitrary object:
// strictify leaves their schemas open.
var openMembers = map[string]bool{"inputSchema": true, "outputSchema": true, "requestedSchema": true,
	"structuredContent": true, "arguments": true, "data": true, "experimental": true, "_meta": true}

// strictify closes every object schema of an MCP schema document, so that
// members a revision does not define are reported: "nothing the negotiated
// revision lacks is ever sent". The official schemas leave objects open
// (no additionalProperties), so plain validation cannot catch, say,
// structuredContent in a 2025-03-26 result.
//
// draft-07 (before 2025-11-25): additionalProperties:false on every schema
// with properties (these revisions use no allOf, and $ref siblings are
// ignored in draft-07). 2020-12 (2025-11-25): unevaluatedProperties:false
// on every schema with properties, $ref or allOf, except the definitions
// that are allOf operands (their siblings add members).
func strictify(root map[string]any, defsKey string) {
	draft2020 := defsKey == "$defs"
	defs := root[defsKey].(map[string]any)
	allOfTargets, openDefs := map[string]bool{}, map[string]bool{}
	for _, d := range defs {
		collectAllOfTargets(d, defsKey, allOfTargets)
		collectOpenDefs(d, defsKey, openDefs)
	}
	for name, d := range defs {
		if m, ok := d.(map[string]any); ok && !openDefs[name] {
			closeSchema(m, draft2020, !allOfTargets[name])
		}
	}
}

// collectOpenDefs records the definitions that open members refer to
// (2026-07-28: "_meta": {"$ref": "#/$defs/ResultMetaObject"}): they hold
// anything, like the members themselves.
func collectOpenDefs(n any, defsKey string, out map[string]bool) {
	collectRefs(n, defsKey, out, func(v map[string]any) (refs []any) {
		props, _ := v["properties"].(map[string]any)
		for name, p := range props {
			if openMembers[name] {
				refs = append(refs, p)
			}
		}
		return refs
	})
}

// collectAllOfTargets records the definitions an allOf refers to.
func collectAllOfTargets(n any, defsKey string, out map[string]bool) {
	collectRefs(n, defsKey, out, func(v map[string]any) []any {
		all, _ := v["allOf"].([]any)
		return all
	})
}

// collectRefs walks every object below n and records the definitions that
// the subschemas pick returns refer to with "$ref".
func collectRefs(n any, defsKey string, out map[string]bool, pick func(map[string]any) []any) {
	switch v := n.(type) {
	case map[string]any:
		for _, s := range pick(v) {
			if m, ok := s.(map[string]any); ok {
				if ref, ok := m["$ref"].(string); ok {
					out[strings.TrimPrefix(ref, "#/"+defsKey+"/")] = true
				}
			}
		}
		for _, c := range v {
			collectRefs(c, defsKey, out, pick)
		}
	case []any:
		for _, c := range v {
			collectRefs(c, defsKey, out, pick)
		}
	}
}

// closeSchema closes schema s (when close is set) and every subschema.
func closeSchema(s map[string]any, draft2020, close bool) {
	_, hasProps := s["properties"]
	_, hasRef := s["$ref"]
	_, hasAllOf := s["allOf"]
	_, hasAdditional := s["additionalProperties"]
	_, hasUneval := s["unevaluatedProperties"]
	if close && !hasAdditional && !hasUneval {
		switch {
		case !draft2020 && hasProps:
			s["additionalProperties"] = false
		case draft2020 && (hasProps || hasRef || hasAllOf):
			s["unevaluatedProperties"] = false
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			if m, ok := p.(map[string]any); ok && !openMembers[name] {
				closeSchema(m, draft2020, true)
			}
		}
	}
	for _, kw := range []string{"items", "additionalProperties", "not"} {
		if m, ok := s[kw].(map[string]any); ok {
			closeSchema(m, draft2020, true)
		}
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if arr, ok := s[kw].([]any); ok {
			for _, a := range arr {
				if m, ok := a.(map[string]any); ok {
					// allOf operands are completed by their siblings.
					closeSchema(m, draft2020, kw != "allOf")
				}
			}
		}
	}
}

// decodeInstance decodes JSON for the validator (numbers kept exact).
func decodeInstance(b []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func (r *revision) validate(def string, inst any) error {
	sch := r.plain[def]
	if sch == nil {
		return fmt.Errorf("revision %s has no definition %s", r.name, strings.TrimPrefix(def, "@"))
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("not a valid %s of revision %s: %v", displayDef(def), r.name, err)
	}
	if err := r.strict[def].Validate(inst); err != nil {
		return fmt.Errorf("%s has members revision %s does not define: %v", displayDef(def), r.name, err)
	}
	return nil
}

func displayDef(def string) string {
	switch def {
	case defResultResponse:
		return "result response"
	case defErrorResponse:
		return "error response"
	case defErrorObject:
		return "error object"
	}
	return def
}

// CheckResult reports whether result (the JSON of a result object) is a
// valid result of method in protocol revision rev, per the revision's schema
// (see ResultDefinitions). method "" checks against the generic Result. A
// method whose result the revision does not define is an error: the server
// answered something the revision lacks.
func CheckResult(rev, method string, result []byte) error {
	r, err := loadRevision(rev)
	if err != nil {
		return err
	}
	inst, err := decodeInstance(result)
	if err != nil {
		return fmt.Errorf("result is not JSON: %v", err)
	}
	return r.checkResult(method, inst)
}

func (r *revision) checkResult(method string, inst any) error {
	if method == "" {
		return r.validate("Result", inst)
	}
	if r.modern {
		return r.checkModernResult(method, inst)
	}
	def, ok := ResultDefinitions[method]
	if !ok {
		return fmt.Errorf("no result definition known for method %q", method)
	}
	if m, ok := inst.(map[string]any); ok && method == "tools/call" {
		if _, isTask := m["task"]; isTask {
			def = "CreateTaskResult"
		}
	}
	if r.plain[def] == nil {
		return fmt.Errorf("revision %s has no %s: method %q does not exist in this revision", r.name, def, method)
	}
	if err := r.validate(def, inst); err != nil {
		return fmt.Errorf("result of %s: %w", method, err)
	}
	return nil
}

// ValidateResult fails t unless result is a valid result of method in
// revision rev (see CheckResult).
func ValidateResult(t testing.TB, rev, method string, result []byte) {
	t.Helper()
	if err := CheckResult(rev, method, result); err != nil {
		t.Errorf("mcptest: %s result %s\n%v", method, result, err)
	}
}

// MethodLookup returns the method of the request the client sent with the
// given id, or "" when unknown. id is the id's key as IDKey computes it.
type MethodLookup func(id string) string

// MethodsByID is a MethodLookup backed by a map from IDKey to method.
type MethodsByID map[string]string

// Lookup implements MethodLookup.
func (m MethodsByID) Lookup(id string) string { return m[id] }

// IDKey returns the canonical text of a JSON-RPC id: strings re-quoted
// minimally, numbers as written. It is the key MethodLookup receives.
func IDKey(id jsontext.Value) string {
	id = bytes.TrimSpace(id)
	if id.Kind() == '"' {
		var s string
		if err := json.Unmarshal(id, &s); err == nil {
			b, _ := jsontext.AppendQuote(nil, s)
			return string(b)
		}
	}
	return string(id)
}

func instanceIDKey(v any) string {
	switch x := v.(type) {
	case string:
		b, _ := jsontext.AppendQuote(nil, x)
		return string(b)
	case jsonv1.Number:
		return string(x)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// CheckServerMessage reports whether msg, one message a server emitted, is
// valid in protocol revision rev:
//
//   - it is valid JSON under RFC 8259 and RFC 7493 (UTF-8, no duplicate
//     member names);
//   - a result response matches the revision's result-response envelope
//     (JSONRPCResponse, or JSONRPCResultResponse in 2025-11-25) and its result
//     matches the definition of the request's method (found with lookup;
//     a nil lookup or an unknown id checks against Result only);
//   - an error response matches JSONRPCError (JSONRPCErrorResponse in
//     2025-11-25). Exception: JSON-RPC 2.0 §5 requires id null when the
//     request id could not be read (parse errors, invalid requests), which
//     the MCP schemas cannot express (RequestId is a string or an integer;
//     2025-11-25 allows omitting id instead). For such responses the error
//     object is checked against the error definition, id must be null, and
//     the envelope must hold exactly jsonrpc "2.0", id and error;
//   - a notification matches JSONRPCNotification and ServerNotification, a
//     request JSONRPCRequest and ServerRequest;
//   - a batch (array) is allowed only in revisions that define
//     JSONRPCBatchResponse (2025-03-26); each element is checked as above.
//
// In revision 2026-07-28 (RevisionModern) results are checked by their
// resultType, server requests are errors, and error codes are checked too
// (see schema_modern.go).
//
// Beyond the official schemas, every object must hold only members the
// revision defines (schemas with undeclared members closed), except where
// the schema allows any object (_meta, error data, structuredContent, JSON
// Schemas).
func CheckServerMessage(rev string, lookup MethodLookup, msg []byte) error {
	if !jsontext.Value(msg).IsValid() {
		return errors.New("not valid JSON (RFC 8259/RFC 7493: syntax, UTF-8, unique member names)")
	}
	r, err := loadRevision(rev)
	if err != nil {
		return err
	}
	inst, err := decodeInstance(msg)
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	arr, isBatch := inst.([]any)
	if !isBatch {
		return r.checkOne(lookup, inst)
	}
	if r.plain["JSONRPCBatchResponse"] == nil {
		return fmt.Errorf("a batch response, but revision %s has no batches", rev)
	}
	if len(arr) == 0 {
		return errors.New("an empty batch response")
	}
	var errs []error
	for i, e := range arr {
		if err := r.checkOne(lookup, e); err != nil {
			errs = append(errs, fmt.Errorf("batch element %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

func (r *revision) checkOne(lookup MethodLookup, inst any) error {
	m, ok := inst.(map[string]any)
	if !ok {
		return fmt.Errorf("a message must be a JSON object, got %T", inst)
	}
	id, hasID := m["id"]
	_, hasMethod := m["method"]
	errObj, hasError := m["error"]
	_, hasResult := m["result"]
	switch {
	case hasMethod && hasID && r.modern:
		return fmt.Errorf("a request to the client (%v), but in revision %s servers send none (input-required results replace them)", m["method"], r.name)
	case hasMethod && hasID:
		if err := r.validate("JSONRPCRequest", inst); err != nil {
			return err
		}
		return r.validate("ServerRequest", r.body(m))
	case hasMethod:
		if err := r.validate("JSONRPCNotification", inst); err != nil {
			return err
		}
		return r.validate("ServerNotification", r.body(m))
	case hasError && hasID && id == nil:
		for k := range m {
			if k != "jsonrpc" && k != "id" && k != "error" {
				return fmt.Errorf("error response with id null has member %q", k)
			}
		}
		if m["jsonrpc"] != "2.0" {
			return fmt.Errorf(`error response with id null: jsonrpc is %v, want "2.0"`, m["jsonrpc"])
		}
		if err := r.validate(defErrorObject, errObj); err != nil {
			return err
		}
		return r.checkModernError(inst, errObj)
	case hasError:
		if err := r.validate(defErrorResponse, inst); err != nil {
			return err
		}
		return r.checkModernError(inst, errObj)
	case hasResult:
		if err := r.validate(defResultResponse, inst); err != nil {
			return err
		}
		method := ""
		if lookup != nil {
			method = lookup(instanceIDKey(id))
		}
		return r.checkResult(method, m["result"])
	}
	return errors.New("neither a request, a notification nor a response")
}

// body returns a request or notification as its revision's definitions
// (PingRequest, LoggingMessageNotification, ...) describe it: before
// 2025-11-25 they lack the envelope members, which JSONRPCRequest and
// JSONRPCNotification check.
func (r *revision) body(m map[string]any) map[string]any {
	if !r.bareBodies {
		return m
	}
	b := make(map[string]any, len(m))
	for k, v := range m {
		if k != "jsonrpc" && k != "id" {
			b[k] = v
		}
	}
	return b
}

// ValidateServerMessage fails t unless msg is a valid server message in
// revision rev (see CheckServerMessage).
func ValidateServerMessage(t testing.TB, rev string, lookup MethodLookup, msg []byte) {
	t.Helper()
	if err := CheckServerMessage(rev, lookup, msg); err != nil {
		t.Errorf("mcptest: server message %s\nviolates the %s schema: %v", msg, rev, err)
	}
}
