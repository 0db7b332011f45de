package main

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// Answers the client gives in these tests, by input request method.
var (
	answerElicit = func(content map[string]any) json.RawMessage {
		return raw(mcp.ElicitResult{Action: "accept", Content: content})
	}
	answerSample = raw(map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "The capital of France is Paris."},
		"model": "test-model", "stopReason": "endTurn"})
	answerRoots = raw(mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///test/root", Name: "Test Root"}}})
)

func raw(v any) json.RawMessage {
	b, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
	if err != nil {
		panic(err)
	}
	return b
}

// round is one exchange: the handler's InputRequiredError (nil when it
// completed) and its result.
type round struct {
	keys  []string // the keys it asked for, sorted
	state []byte
	text  string // the text of a complete result
}

// drive runs fixture as a client would: it answers every input request from
// answers (by key), sends the state back, and stops at the first complete
// result or after max rounds.
func drive(t *testing.T, fixture func(*mcp.Input) (*mcp.CallToolResult, error), answers map[string]json.RawMessage, max int) []round {
	t.Helper()
	var in *mcp.Input
	var rounds []round
	for i := 0; i < max; i++ {
		res, err := fixture(in)
		var ire *mcp.InputRequiredError
		if !errors.As(err, &ire) {
			require.NoError(t, err)
			require.NotEmpty(t, res.Content)
			return append(rounds, round{text: res.Content[0].Text})
		}
		r := round{state: ire.State}
		in = &mcp.Input{Responses: map[string]json.RawMessage{}, State: ire.State, Round: i + 1}
		for k, req := range ire.Requests {
			r.keys = append(r.keys, k)
			a, ok := answers[k]
			require.True(t, ok, "round %d asks %q (%s), which the test cannot answer", i, k, req.Method)
			in.Responses[k] = json.RawMessage(a)
		}
		slices.Sort(r.keys)
		rounds = append(rounds, r)
	}
	return rounds
}

func TestInputRequiredFixtures(t *testing.T) {
	answers := map[string]json.RawMessage{
		keyUserName:    answerElicit(map[string]any{"name": "Alice"}),
		keyCapital:     json.RawMessage(answerSample),
		keyClientRoots: json.RawMessage(answerRoots),
		keyConfirm:     answerElicit(map[string]any{"ok": true}),
		keyGreeting:    json.RawMessage(answerSample),
		keyStep1:       answerElicit(map[string]any{"name": "Alice"}),
		keyStep2:       answerElicit(map[string]any{"color": "blue"}),
	}
	tests := []struct {
		name      string
		fixture   func(*mcp.Input) (*mcp.CallToolResult, error)
		asks      [][]string // the keys of each input-required round
		withState bool       // every input-required round carries a state
		text      string     // the final text
	}{
		{"elicitation", askName, [][]string{{keyUserName}}, false, "Hello, Alice!"},
		{"sampling", askCapital, [][]string{{keyCapital}}, false, "LLM response: The capital of France is Paris."},
		{"list_roots", askRoots, [][]string{{keyClientRoots}}, false, "The client has 1 root(s): file:///test/root"},
		{"request_state", askConfirmation, [][]string{{keyConfirm}}, true, "state-ok: the requestState came back intact; confirmed: true"},
		{"tampered_state", askTamperProof, [][]string{{keyConfirm}}, true, "state-ok: the requestState came back intact; confirmed: true"},
		{"multiple_inputs", askAll, [][]string{{keyClientRoots, keyGreeting, keyUserName}}, true,
			"All inputs received: name=Alice; greeting=The capital of France is Paris.; roots=file:///test/root"},
		{"multi_round", askTwoRounds, [][]string{{keyStep1}, {keyStep2}}, true, "Hello, Alice! Your favorite color is blue."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rounds := drive(t, tt.fixture, answers, 5)
			require.Len(t, rounds, len(tt.asks)+1)
			for i, keys := range tt.asks {
				assert.Equal(t, keys, rounds[i].keys, "round %d", i)
				if tt.withState {
					assert.NotEmpty(t, rounds[i].state, "round %d has a requestState", i)
				}
				if i > 0 {
					assert.NotEqual(t, rounds[i-1].state, rounds[i].state, "round %d has a new requestState", i)
				}
			}
			assert.Equal(t, tt.text, rounds[len(rounds)-1].text)
		})
	}
}

// TestInputRequiredRequests checks the input requests against the
// conformance scenarios' examples, member by member.
func TestInputRequiredRequests(t *testing.T) {
	tests := []struct {
		fixture func(*mcp.Input) (*mcp.CallToolResult, error)
		key     string
		want    string
	}{
		{askName, keyUserName, `{"method":"elicitation/create","params":{"message":"What is your name?",
			"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`},
		{askCapital, keyCapital, `{"method":"sampling/createMessage","params":{"messages":[{"role":"user",
			"content":{"type":"text","text":"What is the capital of France?"}}],"maxTokens":100}}`},
		{askRoots, keyClientRoots, `{"method":"roots/list","params":{}}`},
		{askConfirmation, keyConfirm, `{"method":"elicitation/create","params":{"message":"Please confirm",
			"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`},
		{askAll, keyGreeting, `{"method":"sampling/createMessage","params":{"messages":[{"role":"user",
			"content":{"type":"text","text":"Generate a greeting"}}],"maxTokens":50}}`},
		{askTwoRounds, keyStep1, `{"method":"elicitation/create","params":{"message":"Step 1: What is your name?",
			"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, err := tt.fixture(nil)
			var ire *mcp.InputRequiredError
			require.ErrorAs(t, err, &ire)
			require.Contains(t, ire.Requests, tt.key)
			assert.JSONEq(t, tt.want, string(raw(ire.Requests[tt.key])))
		})
	}

	_, err := askTwoRounds(&mcp.Input{State: fixtureState{Tool: "multi_round", Round: 1}.encode(),
		Responses: map[string]json.RawMessage{keyStep1: answerElicit(map[string]any{"name": "Alice"})}})
	var ire *mcp.InputRequiredError
	require.ErrorAs(t, err, &ire)
	assert.JSONEq(t, `{"method":"elicitation/create","params":{"message":"Step 2: What is your favorite color?",
		"requestedSchema":{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}}}`, string(raw(ire.Requests[keyStep2])))

	_, err = promptWithContext(nil)
	require.ErrorAs(t, err, &ire)
	assert.JSONEq(t, `{"method":"elicitation/create","params":{"message":"What context should the prompt use?",
		"requestedSchema":{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}}}`, string(raw(ire.Requests[keyUserContext])))
}

// TestInputRequiredRetries covers the retries the scenarios send besides
// the straight path: wrong, extra, malformed or partial answers, and
// answers without the state.
func TestInputRequiredRetries(t *testing.T) {
	alice := answerElicit(map[string]any{"name": "Alice"})
	tests := []struct {
		name     string
		fixture  func(*mcp.Input) (*mcp.CallToolResult, error)
		in       *mcp.Input
		wantKeys []string // nil: a complete result
		wantText string
	}{
		{"wrong key: asks again", askName,
			&mcp.Input{Responses: map[string]json.RawMessage{"wrong_key": answerElicit(map[string]any{"data": "wrong"})}}, []string{keyUserName}, ""},
		{"extra keys are ignored", askName,
			&mcp.Input{Responses: map[string]json.RawMessage{keyUserName: json.RawMessage(alice), "unknown_extra_key": answerElicit(map[string]any{"foo": "bar"})}}, nil, "Hello, Alice!"},
		{"malformed answer: asks again", askName,
			&mcp.Input{Responses: map[string]json.RawMessage{keyUserName: json.RawMessage(`12345`)}}, []string{keyUserName}, ""},
		{"declined", askName,
			&mcp.Input{Responses: map[string]json.RawMessage{keyUserName: raw(mcp.ElicitResult{Action: "decline"})}}, nil, "Hello, (the user chose decline)!"},
		{"answer without the state: asks again", askConfirmation,
			&mcp.Input{Responses: map[string]json.RawMessage{keyConfirm: answerElicit(map[string]any{"ok": true})}}, []string{keyConfirm}, ""},
		{"another tool's state: asks again", askConfirmation,
			&mcp.Input{State: fixtureState{Tool: "tampered_state", Round: 1}.encode(),
				Responses: map[string]json.RawMessage{keyConfirm: answerElicit(map[string]any{"ok": true})}}, []string{keyConfirm}, ""},
		{"partial answers: asks the rest", askAll,
			&mcp.Input{State: fixtureState{Tool: "multiple_inputs", Round: 1}.encode(),
				Responses: map[string]json.RawMessage{keyUserName: json.RawMessage(alice)}}, []string{keyClientRoots, keyGreeting}, ""},
		{"round 2 state without step2: asks step2 again", askTwoRounds,
			&mcp.Input{State: fixtureState{Tool: "multi_round", Round: 2, Name: "Alice"}.encode(),
				Responses: map[string]json.RawMessage{keyStep1: json.RawMessage(alice)}}, []string{keyStep2}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.fixture(tt.in)
			if tt.wantKeys == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.wantText, res.Content[0].Text)
				return
			}
			var ire *mcp.InputRequiredError
			require.ErrorAs(t, err, &ire)
			var keys []string
			for k := range ire.Requests {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			assert.Equal(t, tt.wantKeys, keys)
		})
	}

	res, err := promptWithContext(&mcp.Input{Responses: map[string]json.RawMessage{keyUserContext: answerElicit(map[string]any{"context": "test context"})}})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "Use this context: test context", res.Messages[0].Content.Text)
}

func TestCapabilityFixtures(t *testing.T) {
	all := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}, Sampling: &mcp.SamplingCapability{}, Roots: &mcp.RootsCapability{}}
	tests := []struct {
		name     string
		fixture  func(mcp.ClientCapabilities, *mcp.Input) (*mcp.CallToolResult, error)
		caps     mcp.ClientCapabilities
		wantKeys []string // nil: -32021
	}{
		{"capabilities: sampling only", askWhatIsDeclared, mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, []string{keySampling}},
		{"capabilities: elicitation only", askWhatIsDeclared, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, []string{keyElicitation}},
		{"capabilities: all", askWhatIsDeclared, all, []string{keyElicitation, keyRoots, keySampling}},
		{"capabilities: none", askWhatIsDeclared, mcp.ClientCapabilities{}, nil},
		{"missing capability: none", needSampling, mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}, nil},
		{"missing capability: sampling", needSampling, mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, []string{keySampling}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.fixture(tt.caps, nil)
			if tt.wantKeys == nil {
				var rpcErr *mcp.Error
				require.ErrorAs(t, err, &rpcErr)
				assert.EqualValues(t, mcp.CodeMissingClientCapability, rpcErr.Code)
				assert.JSONEq(t, `{"requiredCapabilities":{"sampling":{}}}`, string(raw(rpcErr.Data)))
				return
			}
			var ire *mcp.InputRequiredError
			require.ErrorAs(t, err, &ire)
			var keys []string
			in := &mcp.Input{Responses: map[string]json.RawMessage{}}
			for k, req := range ire.Requests {
				keys = append(keys, k)
				switch req.Method {
				case "elicitation/create":
					in.Responses[k] = answerElicit(map[string]any{"name": "Alice"})
				case "sampling/createMessage":
					in.Responses[k] = json.RawMessage(answerSample)
				case "roots/list":
					in.Responses[k] = json.RawMessage(answerRoots)
				}
			}
			slices.Sort(keys)
			assert.Equal(t, tt.wantKeys, keys)
			res, err := tt.fixture(tt.caps, in)
			require.NoError(t, err, "the answered retry completes")
			assert.NotEmpty(t, res.Content)
		})
	}
}

func TestStreamingElicitation(t *testing.T) {
	_, err := streamingElicitation(nil)
	var ire *mcp.InputRequiredError
	require.ErrorAs(t, err, &ire)
	assert.Equal(t, "elicitation/create", ire.Requests[keyConfirm].Method)
	res, err := streamingElicitation(&mcp.Input{Responses: map[string]json.RawMessage{keyConfirm: answerElicit(map[string]any{"confirm": true})}})
	require.NoError(t, err)
	assert.Equal(t, "Elicitation answered: action=accept, confirm=true", res.Content[0].Text)
}

func TestListTriggers(t *testing.T) {
	reg := newRegistry(quiet)
	var toolChanges, promptChanges int
	reg.OnChange(func() { toolChanges++ })
	reg.OnPromptsChange(func() { promptChanges++ })
	tog := &listToggler{reg: reg}

	for i, want := range []string{"Added the tool " + dynamicTool, "Removed the tool " + dynamicTool, "Added the tool " + dynamicTool} {
		res, err := tog.toggleTool()
		require.NoError(t, err)
		assert.Equal(t, want, res.Content[0].Text)
		_, present := reg.Lookup(dynamicTool)
		assert.Equal(t, i%2 == 0, present)
	}
	for _, want := range []string{"Added the prompt " + dynamicPrompt, "Removed the prompt " + dynamicPrompt} {
		res, err := tog.togglePrompt()
		require.NoError(t, err)
		assert.Equal(t, want, res.Content[0].Text)
	}
	assert.Equal(t, 3, toolChanges)
	assert.Equal(t, 2, promptChanges)
}
