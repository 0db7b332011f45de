package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Input-required results (revision 2026-07-28, "MRTR"): a handler that
// needs the client (an elicitation, a sampling call, its roots) returns
// mcp.InputRequired(requests, state) as its error instead of calling the
// client. keel answers {resultType: "input_required", inputRequests,
// requestState}; the client fulfils the requests and sends the same
// request again with inputResponses and the requestState, and the handler
// runs again and finds the answers in mcp.InputFromContext(ctx). The state
// travels sealed: a tampered one is refused (-32602) before the handler
// runs, so what a handler reads back in Input.State is what it wrote.
//
// The same handlers serve legacy sessions (2025 revisions): there keel
// sends the requests to the client itself and runs the handler again with
// the answers.
//
// Each fixture is a pure function of the client's answers (*mcp.Input, nil
// on the first round) and, where it matters, the client capabilities of
// the request; the registered handlers are thin wrappers around them.

// Keys of the input requests. The conformance suite's scenarios name them.
const (
	keyUserName    = "user_name"
	keyCapital     = "capital_question"
	keyClientRoots = "client_roots"
	keyConfirm     = "confirm"
	keyGreeting    = "greeting"
	keyStep1       = "step1"
	keyStep2       = "step2"
	keyUserContext = "user_context"
	keySampling    = "sampling"
	keyElicitation = "elicitation"
	keyRoots       = "roots"
)

func registerInputRequiredTools(reg *registry.Registry) {
	tools := []struct {
		name, description string
		run               func(*mcp.Input) (*mcp.CallToolResult, error)
	}{
		{"test_input_required_result_elicitation", "Asks the user's name (an elicitation input request), then greets them", askName},
		{"test_input_required_result_sampling", "Asks the client's LLM the capital of France (a sampling input request)", askCapital},
		{"test_input_required_result_list_roots", "Asks the client's roots (a roots/list input request) and lists them", askRoots},
		{"test_input_required_result_request_state", "Asks for a confirmation with a requestState, and answers state-ok when it comes back", askConfirmation},
		{"test_input_required_result_multiple_inputs", "Asks for an elicitation, a sampling call and the roots at once", askAll},
		{"test_input_required_result_multi_round", "Asks the user's name, then their favorite color: two rounds", askTwoRounds},
		{"test_input_required_result_tampered_state", "Asks for a confirmation with a requestState; a tampered state is refused", askTamperProof},
	}
	for _, t := range tools {
		run := t.run
		registry.MustRegister(reg, t.name, t.description,
			func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
				return run(mcp.InputFromContext(ctx))
			}, readOnly)
	}
	registry.MustRegister(reg, "test_input_required_result_capabilities",
		"Asks only for the inputs the request's client capabilities allow (elicitation, sampling, roots)",
		func(ctx context.Context, _ NoArgs) (*mcp.CallToolResult, error) {
			return askWhatIsDeclared(mcp.RequestFromContext(ctx).ClientCapabilities(), mcp.InputFromContext(ctx))
		}, readOnly)
}

func registerInputRequiredPrompts(reg *registry.Registry) {
	registry.MustRegisterPrompt(reg, "test_input_required_result_prompt", "A prompt that asks the user for its context first (an elicitation input request)",
		func(ctx context.Context, _ struct{}) (*mcp.GetPromptResult, error) {
			return promptWithContext(mcp.InputFromContext(ctx))
		}, &registry.PromptOptions{Title: "Prompt with elicited context"})
}

// formSchema returns the JSON Schema of a form with one required field.
func formSchema(field, typ string) json.RawMessage {
	b, err := jsonv2.Marshal(&mcp.ElicitationSchema{
		Type:       "object",
		Properties: map[string]mcp.PrimitiveSchema{field: {Type: typ}},
		Required:   []string{field},
	}, jsonv2.Deterministic(true))
	if err != nil {
		panic(err) // a constant schema
	}
	return b
}

// Input requests of the fixtures, as the scenarios spell them.
var (
	nameRequest    = mcp.ElicitInput(mcp.ElicitParams{Message: "What is your name?", RequestedSchema: formSchema("name", "string")})
	confirmRequest = mcp.ElicitInput(mcp.ElicitParams{Message: "Please confirm", RequestedSchema: formSchema("ok", "boolean")})
	step1Request   = mcp.ElicitInput(mcp.ElicitParams{Message: "Step 1: What is your name?", RequestedSchema: formSchema("name", "string")})
	step2Request   = mcp.ElicitInput(mcp.ElicitParams{Message: "Step 2: What is your favorite color?", RequestedSchema: formSchema("color", "string")})
	contextRequest = mcp.ElicitInput(mcp.ElicitParams{Message: "What context should the prompt use?", RequestedSchema: formSchema("context", "string")})
)

// samplingRequest asks the client's LLM to answer prompt.
func samplingRequest(prompt string, maxTokens int64) mcp.InputRequest {
	return mcp.SamplingInput(&mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.SamplingMessageContent{mcp.SamplingText(prompt)}}},
		MaxTokens: maxTokens,
	})
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.Text(s)}}
}

// field returns the form field name of an accepted elicitation, and a
// description of the answer otherwise ("declined", "cancelled").
func field(r *mcp.ElicitResult, name string) (string, bool) {
	if r.Action != "accept" {
		return "(the user chose " + r.Action + ")", false
	}
	v, ok := r.Content[name]
	if !ok {
		return "(no " + name + " in the form)", false
	}
	return fmt.Sprint(v), true
}

// sampledText returns the first text block of a sampling result.
func sampledText(r *mcp.CreateMessageResult) string {
	for _, c := range r.Content {
		if c.Type == mcp.ContentText {
			return c.Text
		}
	}
	return "(no text in the response)"
}

// rootURIs lists the URIs of a roots result.
func rootURIs(r *mcp.ListRootsResult) string {
	if len(r.Roots) == 0 {
		return "(none)"
	}
	uris := make([]string, len(r.Roots))
	for i, root := range r.Roots {
		uris[i] = root.URI
	}
	return strings.Join(uris, ", ")
}

// askName: round 1 asks user_name; round 2 answers "Hello, <name>!". An
// answer missing (or under another key, or malformed) is asked again.
func askName(in *mcp.Input) (*mcp.CallToolResult, error) {
	r, ok := in.Elicit(keyUserName)
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyUserName: nameRequest}, nil)
	}
	name, _ := field(r, "name")
	return textResult("Hello, " + name + "!"), nil
}

// askCapital: round 1 asks the client's LLM capital_question; round 2
// answers with the LLM's text.
func askCapital(in *mcp.Input) (*mcp.CallToolResult, error) {
	r, ok := in.Sample(keyCapital)
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyCapital: samplingRequest("What is the capital of France?", 100)}, nil)
	}
	return textResult("LLM response: " + sampledText(r)), nil
}

// askRoots: round 1 asks client_roots; round 2 lists them.
func askRoots(in *mcp.Input) (*mcp.CallToolResult, error) {
	r, ok := in.Roots(keyClientRoots)
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyClientRoots: mcp.RootsInput()}, nil)
	}
	return textResult(fmt.Sprintf("The client has %d root(s): %s", len(r.Roots), rootURIs(r))), nil
}

// fixtureState is the requestState of the fixtures that keep one: the tool
// that wrote it, the round, and what earlier rounds learnt.
type fixtureState struct {
	Tool  string `json:"tool"`
	Round int    `json:"round"`
	Name  string `json:"name,omitempty"`
}

func (s fixtureState) encode() []byte {
	b, err := jsonv2.Marshal(s, jsonv2.Deterministic(true))
	if err != nil {
		panic(err) // strings and an int
	}
	return b
}

// stateOf decodes the fixture state the client sent back, reporting
// whether it is one tool wrote for round.
func stateOf(in *mcp.Input, tool string, round int) (fixtureState, bool) {
	var s fixtureState
	if in == nil || jsonv2.Unmarshal(in.State, &s) != nil {
		return s, false
	}
	return s, s.Tool == tool && s.Round == round
}

// askConfirmation: round 1 asks confirm with a requestState; round 2,
// given the answer and the state back, answers "state-ok: ...".
func askConfirmation(in *mcp.Input) (*mcp.CallToolResult, error) {
	return confirmWithState("request_state", in)
}

// askTamperProof behaves as askConfirmation. keel seals every requestState
// (HMAC), so a tampered one never reaches the handler: the server refuses
// it with -32602.
func askTamperProof(in *mcp.Input) (*mcp.CallToolResult, error) {
	return confirmWithState("tampered_state", in)
}

func confirmWithState(tool string, in *mcp.Input) (*mcp.CallToolResult, error) {
	r, answered := in.Elicit(keyConfirm)
	if _, ok := stateOf(in, tool, 1); !ok || !answered {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyConfirm: confirmRequest}, fixtureState{Tool: tool, Round: 1}.encode())
	}
	ok, _ := field(r, "ok")
	return textResult("state-ok: the requestState came back intact; confirmed: " + ok), nil
}

// askAll: round 1 asks user_name (elicitation), greeting (sampling) and
// client_roots (roots/list) with a requestState; later rounds ask again for
// whatever is still missing, and complete once all three are answered.
func askAll(in *mcp.Input) (*mcp.CallToolResult, error) {
	const tool = "multiple_inputs"
	name, hasName := in.Elicit(keyUserName)
	greeting, hasGreeting := in.Sample(keyGreeting)
	roots, hasRoots := in.Roots(keyClientRoots)
	_, stateOK := stateOf(in, tool, 1)
	if !stateOK {
		hasName, hasGreeting, hasRoots = false, false, false
	}
	missing := map[string]mcp.InputRequest{}
	if !hasName {
		missing[keyUserName] = nameRequest
	}
	if !hasGreeting {
		missing[keyGreeting] = samplingRequest("Generate a greeting", 50)
	}
	if !hasRoots {
		missing[keyClientRoots] = mcp.RootsInput()
	}
	if len(missing) > 0 {
		return nil, mcp.InputRequired(missing, fixtureState{Tool: tool, Round: 1}.encode())
	}
	n, _ := field(name, "name")
	return textResult(fmt.Sprintf("All inputs received: name=%s; greeting=%s; roots=%s", n, sampledText(greeting), rootURIs(roots))), nil
}

// askTwoRounds: round 1 asks step1 (the name); round 2 asks step2 (the
// color) with a new requestState carrying the name; round 3 completes.
// Answers that do not fit the state are asked again.
func askTwoRounds(in *mcp.Input) (*mcp.CallToolResult, error) {
	const tool = "multi_round"
	if s, ok := stateOf(in, tool, 2); ok {
		if r, ok := in.Elicit(keyStep2); ok {
			color, _ := field(r, "color")
			return textResult(fmt.Sprintf("Hello, %s! Your favorite color is %s.", s.Name, color)), nil
		}
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyStep2: step2Request}, s.encode())
	}
	if _, ok := stateOf(in, tool, 1); ok {
		if r, ok := in.Elicit(keyStep1); ok {
			name, _ := field(r, "name")
			return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyStep2: step2Request}, fixtureState{Tool: tool, Round: 2, Name: name}.encode())
		}
	}
	return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyStep1: step1Request}, fixtureState{Tool: tool, Round: 1}.encode())
}

// askWhatIsDeclared asks for one input of each kind the request's client
// capabilities allow (elicitation, sampling, roots), and none other; a
// request that declares none of the three is refused with -32021. Once
// every request is answered it reports what came back.
func askWhatIsDeclared(caps mcp.ClientCapabilities, in *mcp.Input) (*mcp.CallToolResult, error) {
	asked := map[string]mcp.InputRequest{}
	if caps.Elicitation != nil {
		asked[keyElicitation] = nameRequest
	}
	if caps.Sampling != nil {
		asked[keySampling] = samplingRequest("What is the capital of France?", 100)
	}
	if caps.Roots != nil {
		asked[keyRoots] = mcp.RootsInput()
	}
	if len(asked) == 0 {
		return nil, mcp.MissingCapabilityError(mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}},
			"test_input_required_result_capabilities needs elicitation, sampling or roots; the request declares none")
	}
	keys := make([]string, 0, len(asked))
	for k := range asked {
		if !in.Has(k) {
			return nil, mcp.InputRequired(asked, nil)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return textResult("Received answers for: " + strings.Join(keys, ", ")), nil
}

// promptWithContext: round 1 asks user_context; round 2 renders a prompt
// using it.
func promptWithContext(in *mcp.Input) (*mcp.GetPromptResult, error) {
	r, ok := in.Elicit(keyUserContext)
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{keyUserContext: contextRequest}, nil)
	}
	text, _ := field(r, "context")
	return &mcp.GetPromptResult{
		Description: "A prompt using the context the user gave",
		Messages:    []mcp.PromptMessage{mcp.UserMessage(mcp.Text("Use this context: " + text))},
	}, nil
}
