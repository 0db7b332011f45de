package mcptest

import (
	jsonv1 "encoding/json"
	"fmt"
)

// RevisionModern is the stateless protocol revision. Its schema differs
// from the 2025 ones in ways the plain definitions cannot express alone:
//
//   - every result carries resultType; "input_required" results (only on
//     tools/call, prompts/get and resources/read) are InputRequiredResult
//     and hold inputRequests or requestState; "task" results (tools/call,
//     tasks extension) are not in the core schema and are checked against
//     Result only;
//   - servers send no requests, and initialize, ping, logging/setLevel,
//     resources/(un)subscribe, tasks/result and tasks/list are gone;
//     tasks/get, tasks/update and tasks/cancel belong to the tasks
//     extension and are checked against Result only;
//   - errors -32020, -32021 and -32022 have definitions of their own
//     (HeaderMismatchError, MissingRequiredClientCapabilityError,
//     UnsupportedProtocolVersionError); -32002 and -32042 are not used,
//     and no other code in -32099..-32020 is defined.
const RevisionModern = "2026-07-28"

// modernDefs are the definitions only the modern revision has, compiled
// when present.
var modernDefs = []string{"InputRequiredResult", "HeaderMismatchError", "MissingRequiredClientCapabilityError", "UnsupportedProtocolVersionError"}

// Result types of the modern revision.
const (
	resultComplete      = "complete"
	resultInputRequired = "input_required"
	resultTask          = "task"
)

// inputRequiredMethods are the methods that may answer input_required.
var inputRequiredMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// removedMethods are the methods of the 2025 revisions the modern one lacks.
var removedMethods = map[string]bool{"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "tasks/result": true, "tasks/list": true}

// extensionMethods are the methods of the tasks extension: their results
// are not in the core schema.
var extensionMethods = map[string]bool{"tasks/get": true, "tasks/update": true, "tasks/cancel": true}

// errorDefinitions maps the modern error codes to the definitions of their
// error responses.
var errorDefinitions = map[int64]string{
	-32020: "HeaderMismatchError",
	-32021: "MissingRequiredClientCapabilityError",
	-32022: "UnsupportedProtocolVersionError",
}

func (r *revision) checkModernResult(method string, inst any) error {
	if removedMethods[method] {
		return fmt.Errorf("method %q does not exist in revision %s", method, r.name)
	}
	if extensionMethods[method] {
		return r.validate("Result", inst)
	}
	def, ok := ResultDefinitions[method]
	if !ok {
		return fmt.Errorf("no result definition known for method %q", method)
	}
	m, _ := inst.(map[string]any)
	switch rt := m["resultType"]; rt {
	case resultInputRequired:
		if !inputRequiredMethods[method] {
			return fmt.Errorf("result of %s: resultType %q, which only tools/call, prompts/get and resources/read may answer", method, rt)
		}
		if err := r.validate("InputRequiredResult", inst); err != nil {
			return fmt.Errorf("result of %s: %w", method, err)
		}
		_, hasRequests := m["inputRequests"]
		_, hasState := m["requestState"]
		if !hasRequests && !hasState {
			return fmt.Errorf("result of %s: an InputRequiredResult needs inputRequests or requestState", method)
		}
		return nil
	case resultTask:
		if method != "tools/call" {
			return fmt.Errorf("result of %s: resultType %q, which only tools/call may answer (tasks extension)", method, rt)
		}
		return r.validate("Result", inst)
	case resultComplete, nil: // nil: the definition reports the missing resultType
	default:
		return fmt.Errorf("result of %s: unknown resultType %v (want %q or %q)", method, rt, resultComplete, resultInputRequired)
	}
	if r.plain[def] == nil {
		return fmt.Errorf("revision %s has no %s: method %q does not exist in this revision", r.name, def, method)
	}
	if err := r.validate(def, inst); err != nil {
		return fmt.Errorf("result of %s: %w", method, err)
	}
	return nil
}

// checkModernError checks the error response msg (its error object errObj
// already valid) against the modern revision's rules on codes; other
// revisions have none.
func (r *revision) checkModernError(msg, errObj any) error {
	if !r.modern {
		return nil
	}
	e, _ := errObj.(map[string]any)
	n, _ := e["code"].(jsonv1.Number)
	code, err := n.Int64()
	if err != nil {
		return nil // the schema already requires an integer
	}
	if def, ok := errorDefinitions[code]; ok {
		return r.validate(def, msg)
	}
	switch {
	case code == -32002 || code == -32042:
		return fmt.Errorf("error code %d is not used in revision %s", code, r.name)
	case code >= -32099 && code <= -32020:
		return fmt.Errorf("error code %d is reserved and undefined in revision %s (only -32020, -32021 and -32022 are defined in -32099..-32020)", code, r.name)
	}
	return nil
}
