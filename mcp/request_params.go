package mcp

import (
	"sync"

	"github.com/go-json-experiment/json"
)

// paramsCache holds a request's params as Params decoded them, one value
// per type asked for.
type paramsCache struct {
	mu      sync.Mutex
	decoded []decodedParams
}

type decodedParams struct {
	v   any // a *T
	err error
}

// Params returns the params of req decoded into a T, the way the Server
// decodes the params of its own methods: member names are case-sensitive,
// duplicate names and invalid UTF-8 are refused, absent or null params
// give the zero T. The error is the *Error to answer (-32602, which names
// the member when the fault is a member's value), so a middleware or
// handler can return it as it is; with an error, the *T is the zero T,
// never a value half read.
//
// Params decodes once per request and type: every later call for the same
// T, from any middleware or from the method's handler, returns the same *T
// (and the same error) without reading the params again. The value is
// shared by all of them: treat it as read-only.
func Params[T any](req *Request) (*T, error) {
	c := &req.params
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.decoded {
		if p, ok := d.v.(*T); ok {
			return p, d.err
		}
	}
	p := new(T)
	var err error
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if e := json.Unmarshal(req.Params, p); e != nil {
			p, err = new(T), invalidParams(e)
		}
	}
	c.decoded = append(c.decoded, decodedParams{v: p, err: err})
	return p, err
}
