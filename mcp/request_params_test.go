package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
)

type greetParams struct {
	Name  string `json:"name"`
	Times int    `json:"times"`
}

func TestParamsDecodesStrictly(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		want         greetParams
		errPart      string // "" = no error
	}{
		{"members", `{"name":"ann","times":2}`, greetParams{Name: "ann", Times: 2}, ""},
		{"absent params are the zero value", ``, greetParams{}, ""},
		{"null params are the zero value", `null`, greetParams{}, ""},
		{"unknown members are ignored", `{"name":"ann","x":1}`, greetParams{Name: "ann"}, ""},
		{"a wrong type names the member", `{"name":5}`, greetParams{}, `"/name" must be a string, not a number`},
		{"names are case-sensitive", `{"Name":"ann"}`, greetParams{}, ""},
		{"a duplicate name is refused", `{"name":"a","name":"b"}`, greetParams{}, "Invalid params"},
		{"invalid UTF-8 is refused", "{\"name\":\"\xff\"}", greetParams{}, "Invalid params"},
		{"params that are not an object", `[1]`, greetParams{}, "must be an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &mcp.Request{Method: "acme/greet"}
			if tc.params != "" {
				req.Params = json.RawMessage(tc.params)
			}
			p, err := mcp.Params[greetParams](req)
			if tc.errPart != "" {
				var e *mcp.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, int64(mcp.CodeInvalidParams), e.Code)
				assert.Contains(t, e.Message, tc.errPart)
				assert.Equal(t, greetParams{}, *p, "with an error, the zero value, never half read")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, *p)
		})
	}
}

// countingParams counts how often it is decoded.
type countingParams struct{ Name string }

var countingDecodes atomic.Int32

func (c *countingParams) UnmarshalJSON(b []byte) error {
	countingDecodes.Add(1)
	var w struct {
		Name string `json:"name"`
	}
	err := json.Unmarshal(b, &w)
	c.Name = w.Name
	return err
}

// TestParamsDecodedOncePerRequest: a middleware and the handler of a
// custom method ask for the same params type; they are decoded once per
// request, and both get the same value. A second type decodes apart.
func TestParamsDecodedOncePerRequest(t *testing.T) {
	countingDecodes.Store(0)
	var seen atomic.Pointer[countingParams]
	o := modernOptions(&modernTools{})
	o.Middleware = []mcp.Middleware{func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, req *mcp.Request) (any, error) {
			if req.Method != "acme/greet" {
				return next(ctx, req)
			}
			p, err := mcp.Params[countingParams](req)
			if err != nil {
				return nil, err
			}
			if p.Name == "" {
				return nil, &mcp.Error{Code: mcp.CodeInvalidParams, Message: "Invalid params: name is required"}
			}
			seen.Store(p)
			return next(ctx, req)
		}
	}}
	o.Methods = map[string]mcp.MethodHandler{
		"acme/greet": func(ctx context.Context, req *mcp.Request) (any, error) {
			p, err := mcp.Params[countingParams](req)
			if err != nil {
				return nil, err
			}
			if p != seen.Load() {
				return nil, errors.New("the handler got another value than the middleware")
			}
			g, err := mcp.Params[greetParams](req) // another type: its own decoding
			if err != nil {
				return nil, err
			}
			return map[string]any{"hello": p.Name, "times": g.Times}, nil
		},
	}
	c := startPlain(t, o)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"acme/greet","params":{"name":"ann","times":3,` + modernMeta + `}}`)
	res := c.recv()["result"].(map[string]any)
	assert.Equal(t, "ann", res["hello"])
	assert.Equal(t, float64(3), res["times"])
	assert.Equal(t, int32(1), countingDecodes.Load(), "decoded once for the middleware and the handler")

	// The middleware refuses bad params with the error Params gives.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"acme/greet","params":{"name":5,` + modernMeta + `}}`)
	e := c.recv()["error"].(map[string]any)
	assert.Equal(t, float64(mcp.CodeInvalidParams), e["code"])
	assert.Contains(t, e["message"], "Invalid params")
}
