package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

// greetMethod is a custom method that asks the client for a name (one
// round), then answers with it, the state it kept and what its params
// carried besides the input members.
func greetMethod(ctx context.Context, req *mcp.Request) (any, error) {
	in := mcp.InputFromContext(ctx)
	er, ok := in.Elicit("name")
	if !ok {
		return nil, mcp.InputRequired(map[string]mcp.InputRequest{"name": askName}, []byte("greet-1"))
	}
	var p struct {
		Greeting string `json:"greeting"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: err.Error()}
	}
	return map[string]any{"text": p.Greeting + ", " + er.Content["name"].(string), "state": string(in.State), "round": in.Round}, nil
}

func inputMethodOptions() *mcp.ServerOptions {
	o := modernOptions(&modernTools{})
	o.Methods = map[string]mcp.MethodHandler{
		"acme/greet":   greetMethod,
		"acme/nogreet": greetMethod, // not declared: it may not ask
	}
	o.InputMethods = []string{"acme/greet"}
	return o
}

// A custom method declared in InputMethods runs input rounds in
// 2026-07-28: input_required with a sealed state, then the retry's
// answers as the handler's Input; the state is bound to the method and
// its other params.
func TestCustomMethodInputRounds2026(t *testing.T) {
	c := startPlain(t, inputMethodOptions()) // the schema does not know acme/greet
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/greet","params":{"greeting":"Hello",` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, "input_required", res["resultType"])
	reqs := res["inputRequests"].(map[string]any)
	assert.Equal(t, "elicitation/create", reqs["name"].(map[string]any)["method"])
	state := res["requestState"].(string)
	require.NotEmpty(t, state)

	answers := `"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":"` + state + `"`
	c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/greet","params":{"greeting":"Hello",` + answers + `,` + modernMeta + `}}`)
	m := c.recv()
	res, ok := m["result"].(map[string]any)
	require.True(t, ok, "%v", m)
	assert.Equal(t, "complete", res["resultType"])
	assert.Equal(t, "Hello, Ada", res["text"])
	assert.Equal(t, "greet-1", res["state"])
	assert.Equal(t, float64(1), res["round"])

	// The state is bound to the params (but the input members and _meta)
	// and to the method.
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"acme/greet","params":{"greeting":"Bye",` + answers + `,` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"acme/greet","params":{"greeting":"Hello","requestState":"x` + state[1:] + `",` + modernMeta + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"acme/greet","params":{"greeting":"Hello","inputResponses":[],` + modernMeta + `}}`,
	} {
		c.send(line)
		e, ok := c.recv()["error"].(map[string]any)
		require.True(t, ok, "case %d", i)
		assert.Equal(t, float64(-32602), e["code"], "case %d", i)
	}

	// A method that did not declare input rounds cannot ask: -32603.
	c.send(`{"jsonrpc":"2.0","id":6,"method":"acme/nogreet","params":{"greeting":"Hello",` + modernMeta + `}}`)
	e, ok := c.recv()["error"].(map[string]any)
	require.True(t, ok)
	assert.Equal(t, float64(-32603), e["code"])
}
