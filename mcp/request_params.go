package mcp

import (
	"sync"

	"github.com/go-json-experiment/json"
)

// paramsCache holds a request's params as Params decoded them, one value
// per type asked for. It is small (it lives in every Request): the first
// value is held inline, so that the one decoding of a built-in method's
// handler (prompts/get, resources/read, completion/complete) needs no
// allocation beyond its value; an error, or a second type, takes one.
type paramsCache struct {
	mu    sync.Mutex
	src   *byte // the first byte of the params the values were decoded from
	n     int   // and their length
	first any   // a *T, or a *failedParams (nil: none yet)
	more  *[]any
}

// failedParams is a T whose decoding failed: v is the zero *T.
type failedParams struct {
	v   any
	err *Error
}

// paramsStart identifies params by their first byte in memory (nil when
// empty).
func paramsStart(params []byte) *byte {
	if len(params) == 0 {
		return nil
	}
	return &params[0]
}

// lookup returns the *T decoded from params (and the error decoding it
// gave), if Params decoded one; c.mu is held. Values decoded from other
// params (a middleware set Request.Params anew since, also by appending to
// the same bytes) are dropped. Params rewritten in place, same bytes and
// same length, are not told apart: set Request.Params to new bytes.
func lookup[T any](c *paramsCache, params []byte) (*T, *Error, bool) {
	if start := paramsStart(params); c.src != start || c.n != len(params) {
		c.src, c.n, c.first, c.more = start, len(params), nil, nil
		return nil, nil, false
	}
	if p, err, ok := entryOf[T](c.first); ok {
		return p, err, true
	}
	if c.more != nil {
		for _, e := range *c.more {
			if p, err, ok := entryOf[T](e); ok {
				return p, err, true
			}
		}
	}
	return nil, nil, false
}

// entryOf returns the value and error of cache entry e if it is a T's.
func entryOf[T any](e any) (*T, *Error, bool) {
	switch x := e.(type) {
	case *T:
		return x, nil, true
	case *failedParams:
		if p, ok := x.v.(*T); ok {
			return p, x.err, true
		}
	}
	return nil, nil, false
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
// (and the same error) without reading the params again, as long as
// req.Params holds the same bytes (params a middleware sets anew are
// decoded anew). The value is shared by all of them: treat it as
// read-only. The Server's own
// methods read their params through Params too: a middleware that decoded
// CallToolParams (tools/call), GetPromptParams (prompts/get),
// ReadResourceParams (resources/read) or CompleteParams
// (completion/complete) spares the method's handler its decoding.
func Params[T any](req *Request) (*T, error) {
	p, e := paramsOf[T](req)
	if e != nil {
		return p, e
	}
	return p, nil // not a typed nil in an interface
}

// paramsOf is Params with the error as the *Error it is.
func paramsOf[T any](req *Request) (*T, *Error) {
	c := &req.params
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, e, ok := lookup[T](c, req.Params); ok {
		return p, e
	}
	p := new(T)
	var e *Error
	var entry any = p
	if len(req.Params) > 0 && string(req.Params) != "null" {
		if err := json.Unmarshal(req.Params, p); err != nil {
			p, e = new(T), invalidParams(err)
			entry = &failedParams{v: p, err: e}
		}
	}
	switch {
	case c.first == nil:
		c.first = entry
	case c.more == nil:
		c.more = &[]any{entry}
	default:
		*c.more = append(*c.more, entry)
	}
	return p, e
}

// decodedBefore returns the *T Params decoded from req's current params
// without an error, if a middleware (or anything else) asked for one
// already; it never decodes. A handler that reads its params its own way
// (tools/call: toolCallParams) takes the value a middleware decoded and
// spares its own decoding.
func decodedBefore[T any](req *Request) (*T, bool) {
	c := &req.params
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, e, ok := lookup[T](c, req.Params); ok && e == nil {
		return p, true
	}
	return nil, false
}
