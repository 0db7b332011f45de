//go:build !keel_omit2025

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

// bridge serves a legacy request whose handler answered ir: it asks the
// client and runs req's handler again with the answers (its Input), until
// the handler completes or MaxInputRounds is reached.
func (r *responder) bridge(ctx context.Context, req *Request, ir *InputRequiredError) (any, error) {
	var in *Input
	for {
		round := 0
		if in != nil {
			round = in.Round + 1
		}
		if round+1 >= r.ss.server.opts.MaxInputRounds {
			return nil, &Error{Code: CodeInternalError, Message: fmt.Sprintf("Internal error: the handler asked for input more than MaxInputRounds (%d) times", r.ss.server.opts.MaxInputRounds)}
		}
		responses, ferr := r.ss.fulfil(ctx, ir)
		if ferr != nil {
			return nil, ferr
		}
		in = &Input{Responses: responses, State: ir.State, Round: round}
		res, err := req.handle(withInput(ctx, in), req)
		if err == nil || !errors.As(err, &ir) {
			return res, err
		}
	}
}

// fulfil makes the requests of ir to the client of a legacy session and
// returns their results by key.
func (ss *Session) fulfil(ctx context.Context, ir *InputRequiredError) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(ir.Requests))
	for _, k := range sortedKeys(ir.Requests) {
		req := ir.Requests[k]
		var res any
		var err error
		switch req.Method {
		case methodElicitationCreate:
			var p ElicitParams
			if err = convertParams(req.Params, &p); err == nil {
				res, err = ss.Elicit(ctx, &p)
			}
		case methodSamplingCreateMessage:
			var p CreateMessageParams
			if err = convertParams(req.Params, &p); err == nil {
				res, err = ss.CreateMessage(ctx, &p)
			}
		case methodRootsList:
			var roots []Root
			if roots, err = ss.ListRoots(ctx); err == nil {
				if roots == nil {
					roots = []Root{}
				}
				res = &ListRootsResult{Roots: roots}
			}
		default:
			err = fmt.Errorf("mcp: input request %q: unknown method %q", k, req.Method)
		}
		if err != nil {
			var ce *CapabilityError
			if errors.As(err, &ce) {
				return nil, MissingCapabilityError(requiredFor(req), err.Error())
			}
			return nil, err
		}
		b, err := jsonv2.Marshal(res)
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}
