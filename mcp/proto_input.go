package mcp

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Input-required results (revision 2026-07-28, "MRTR"): a tool, prompt or
// resource handler that cannot finish without the client (an elicitation,
// a sampling call, the client's roots) returns an *InputRequiredError
// instead of calling the client. keel answers a modern request with
// {resultType: "input_required", inputRequests, requestState}; the client
// fulfils the requests and sends the original request again with
// inputResponses and the requestState, and the handler runs once more and
// finds the answers in InputFromContext(ctx). The handler's State travels
// sealed (encrypted and authenticated with AES-256-GCM under
// ServerOptions.StateKey or StateKeys, bound to the method, the tool,
// prompt or resource, a digest of its arguments, the caller and an
// expiry), so the client cannot read it, any replica holding the key can
// trust it, and a tampered state is refused with -32602.
//
// The same handler serves legacy sessions: there keel makes the real
// server-to-client requests (when the client declared the capabilities)
// and runs the handler again with their results, up to
// ServerOptions.MaxInputRounds times.

// InputRequest is one request the server needs the client to fulfil: an
// elicitation/create, sampling/createMessage or roots/list, without
// jsonrpc and id. Build it with ElicitInput, SamplingInput or RootsInput.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// ElicitInput returns an input request for elicitation/create.
func ElicitInput(p ElicitParams) InputRequest {
	return InputRequest{Method: methodElicitationCreate, Params: p}
}

// SamplingInput returns an input request for sampling/createMessage.
func SamplingInput(p *CreateMessageParams) InputRequest {
	return InputRequest{Method: methodSamplingCreateMessage, Params: p}
}

// RootsInput returns an input request for roots/list.
func RootsInput() InputRequest {
	return InputRequest{Method: methodRootsList, Params: struct{}{}}
}

// InputRequiredError is what a handler returns (as its error) when it needs
// answers from the client before it can complete. Requests maps keys of the
// handler's choosing to the requests; State is opaque data the handler
// wants back with the answers (it is sealed, never readable or forgeable by
// the client). At least one of the two must be set.
type InputRequiredError struct {
	Requests map[string]InputRequest
	State    []byte
}

// InputRequired returns an *InputRequiredError.
func InputRequired(requests map[string]InputRequest, state []byte) *InputRequiredError {
	return &InputRequiredError{Requests: requests, State: state}
}

// Error implements error.
func (e *InputRequiredError) Error() string {
	keys := make([]string, 0, len(e.Requests))
	for k := range e.Requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "mcp: input required from the client: " + strings.Join(keys, ", ")
}

// inputRequiredResult is the wire form of an input-required answer.
type inputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState,omitempty"`
	Meta          Meta                    `json:"_meta,omitempty"`
}

// Input is what the client sent back for an earlier InputRequiredError: the
// responses under the keys of its requests, and the handler's State. A nil
// *Input (the first round) has no responses and no state.
type Input struct {
	// Responses holds the raw results (ElicitResult, CreateMessageResult,
	// ListRootsResult) by key. Keys the handler did not ask for may be
	// present; ignore them.
	Responses map[string]json.RawMessage
	// State is the State of the InputRequiredError that asked, verified.
	State []byte
	// Round counts the rounds so far: 0 on the first call.
	Round int
}

type inputKey struct{}

func withInput(ctx context.Context, in *Input) context.Context {
	if in == nil {
		return ctx
	}
	return context.WithValue(ctx, inputKey{}, in)
}

// InputFromContext returns the client's answers to the handler's earlier
// InputRequiredError, or nil on a first call.
func InputFromContext(ctx context.Context) *Input {
	in, _ := ctx.Value(inputKey{}).(*Input)
	return in
}

// Has reports whether the client answered key.
func (in *Input) Has(key string) bool {
	if in == nil {
		return false
	}
	_, ok := in.Responses[key]
	return ok
}

// Elicit returns the client's ElicitResult under key; false when absent or
// not an elicitation result.
func (in *Input) Elicit(key string) (*ElicitResult, bool) {
	r := new(ElicitResult)
	return r, in.decode(key, r) && r.Action != ""
}

// Sample returns the client's CreateMessageResult under key; false when
// absent or not a sampling result.
func (in *Input) Sample(key string) (*CreateMessageResult, bool) {
	r := new(CreateMessageResult)
	return r, in.decode(key, r) && r.Role != ""
}

// Roots returns the client's ListRootsResult under key; false when absent
// or not a roots result.
func (in *Input) Roots(key string) (*ListRootsResult, bool) {
	var w struct {
		Roots *[]Root `json:"roots"`
		Meta  Meta    `json:"_meta,omitempty"`
	}
	if !in.decode(key, &w) || w.Roots == nil {
		return nil, false
	}
	return &ListRootsResult{Roots: *w.Roots, Meta: w.Meta}, true
}

func (in *Input) decode(key string, v any) bool {
	if in == nil {
		return false
	}
	raw, ok := in.Responses[key]
	return ok && jsonv2.Unmarshal(raw, v, jsonv2.RejectUnknownMembers(false)) == nil
}

// inputResultValid decodes the response to an input request of method,
// reporting whether it has that method's result shape.
func inputResultValid(method string, raw jsontext.Value) bool {
	in := &Input{Responses: map[string]json.RawMessage{"k": json.RawMessage(raw)}}
	switch method {
	case methodElicitationCreate:
		_, ok := in.Elicit("k")
		return ok
	case methodSamplingCreateMessage:
		_, ok := in.Sample("k")
		return ok
	case methodRootsList:
		_, ok := in.Roots("k")
		return ok
	}
	return false
}
