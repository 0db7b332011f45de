package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/transport"
)

// stateSubject returns who a requestState is bound to: the peer key of
// the request's verified token (transport.PeerOfToken: "subject:" and its
// subject, else "client:" and its client id, so that a subject that reads
// "client:app" is not the client app), or "" without one.
func stateSubject(ctx context.Context) string {
	if p, ok := transport.PeerOfToken(TokenInfoFromContext(ctx)); ok {
		return p.Key
	}
	return ""
}

// inputFor prepares the Input of a 2026-07-28 request whose row declares
// input rounds (modernRounds), for its input target (the tool, prompt or
// resource, "" for a custom method) with arguments args: it verifies the
// requestState (a state that does not verify is refused with -32602),
// checks the inputResponses against the methods of the requests they
// answer, and records what the next state is bound to. It is called once
// per request, before the handler runs. A legacy request has no Input
// from its params: the server asks the client itself (legacyRounds).
func (r *responder) inputFor(ctx context.Context, method, target string, args jsontext.Value, responses map[string]json.RawMessage, state string) (*Input, *Error) {
	s := r.ss.server
	subject := stateSubject(ctx)
	// The digest of the arguments is computed only when a state is
	// opened or sealed: most requests need neither.
	r.modern().bind, r.modern().bound = sealedState{Method: method, Target: target, Subject: subject}, true
	r.modern().bindArgs = args
	if state == "" && responses == nil {
		return nil, nil
	}
	r.modern().bind.Digest = argsDigest(args)
	in := &Input{Responses: map[string]json.RawMessage{}}
	var keys map[string]string
	if state != "" {
		st, e := s.openState(state, method, target, r.modern().bind.Digest, subject)
		if e != nil {
			return nil, e
		}
		if st.Round+1 >= s.opts.MaxInputRounds {
			return nil, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid params: too many rounds of input (MaxInputRounds is %d)", s.opts.MaxInputRounds)}
		}
		in.State, in.Round, keys = st.State, st.Round+1, st.Keys
		r.modern().bind.Round = in.Round
	}
	for k, raw := range responses {
		if jsontext.Value(raw).Kind() != '{' {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses[" + quote(k) + "] must be an object"}
		}
		if m, asked := keys[k]; asked && !inputResultValid(m, jsontext.Value(raw)) {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses[" + quote(k) + "] is not a result of " + m}
		}
		in.Responses[k] = raw
	}
	return in, nil
}

// inputTarget is what a request's input rounds are about, as its row's
// inputReader reads it from the request, once, before the rounds.
type inputTarget struct {
	// name is the tool's or prompt's name, the resource's uri, "" for a
	// custom method: with the method, what a requestState is bound to.
	name string
	// args are the arguments a requestState is bound to besides (encoded
	// deterministically, so that the same arguments give the same bytes
	// in every round).
	args jsontext.Value
	// responses and state are the request's inputResponses and
	// requestState (2026-07-28).
	responses map[string]json.RawMessage
	state     string
	// outcome, if set, maps what the rounds end with (the handler's last
	// outcome, or the error that ended the rounds) to the request's.
	outcome func(req *Request, res any, err error) (any, error)
}

// inputReader reads the input target of a request whose row of the
// method table declares input rounds (method.legacyInput, modernInput).
// It runs before the rounds, once per pass through the handler chain, so
// that its errors (the params' shape) come before those of the rounds
// (a requestState that does not verify). What it decodes with Params the
// handler finds in the request's Params cache.
type inputReader func(ctx context.Context, req *Request) (inputTarget, error)

// inputRounds are the input rounds of a request in the column that
// serves it: its row's reader and its column's rule (the zero value: the
// method takes none).
type inputRounds struct {
	read inputReader
	rule inputRule
}

// withInputRounds runs the handler of a request whose row declares input
// rounds, built-in or custom, in its column's rounds: the one place where
// rounds run around a handler. The row's reader reads the input target
// (its errors are answered first), the column's inputRule runs the
// handler once per round, each round with its Input in the handler's
// context, and the target's outcome, if any, maps what the rounds end
// with. The handler chain (Middleware) runs once around all the rounds.
func withInputRounds(ctx context.Context, req *Request) (any, error) {
	t, err := req.rounds.read(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := req.rounds.rule(ctx, req, t)
	if t.outcome != nil {
		return t.outcome(req, res, err)
	}
	return res, err
}

// readInputParams is the inputReader of a custom method named in
// ServerOptions.InputMethods: its params' inputResponses and requestState
// are the rounds' (the handler reads them with InputFromContext), and the
// rest of its params, without _meta, is what a requestState is bound to.
func readInputParams(_ context.Context, req *Request) (inputTarget, error) {
	args, responses, state, e := splitInputParams(jsontext.Value(req.Params))
	if e != nil {
		return inputTarget{}, e
	}
	return inputTarget{args: args, responses: responses, state: state}, nil
}

// inputParamNames are the params members of an input round: they are no
// part of the arguments a requestState is bound to, nor is _meta.
const (
	paramInputResponses = "inputResponses"
	paramRequestState   = "requestState"
	paramMeta           = "_meta"
)

// splitInputParams reads the input rounds' members of a custom method's
// params, and returns the other members (but _meta) as the arguments,
// encoded deterministically, so that the same arguments give the same
// bytes in every round. Params that are not an object carry no input
// round: they are the arguments as they are.
func splitInputParams(params jsontext.Value) (args jsontext.Value, responses map[string]json.RawMessage, state string, e *Error) {
	if params.Kind() != '{' {
		return params, nil, "", nil
	}
	var members map[string]jsontext.Value
	if err := jsonv2.Unmarshal(params, &members); err != nil {
		return nil, nil, "", invalidParams(err)
	}
	if raw, ok := members[paramInputResponses]; ok {
		if err := jsonv2.Unmarshal(raw, &responses); err != nil || raw.Kind() != '{' {
			return nil, nil, "", &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses must be an object"}
		}
		delete(members, paramInputResponses)
	}
	if raw, ok := members[paramRequestState]; ok {
		if err := jsonv2.Unmarshal(raw, &state); err != nil {
			return nil, nil, "", &Error{Code: CodeInvalidParams, Message: "Invalid params: requestState must be a string"}
		}
		delete(members, paramRequestState)
	}
	delete(members, paramMeta)
	b, err := jsonv2.Marshal(members, jsonv2.Deterministic(true))
	if err != nil {
		return nil, nil, "", invalidParams(err)
	}
	return b, responses, state, nil
}

// convertParams copies params (a typed value or raw JSON) into dst.
func convertParams(params, dst any) error {
	switch p := params.(type) {
	case ElicitParams:
		if d, ok := dst.(*ElicitParams); ok {
			*d = p
			return nil
		}
	case *ElicitParams:
		if d, ok := dst.(*ElicitParams); ok && p != nil {
			*d = *p
			return nil
		}
	case *CreateMessageParams:
		if d, ok := dst.(*CreateMessageParams); ok && p != nil {
			*d = *p
			return nil
		}
	}
	b, err := jsonv2.Marshal(params)
	if err != nil {
		return err
	}
	return jsonv2.Unmarshal(b, dst)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requiredFor returns the client capabilities an input request needs.
func requiredFor(req InputRequest) ClientCapabilities {
	var c ClientCapabilities
	switch req.Method {
	case methodElicitationCreate:
		c.Elicitation = &ElicitationCapability{}
		var p ElicitParams
		if convertParams(req.Params, &p) == nil && p.Mode == ElicitModeURL {
			c.Elicitation.URL = &struct{}{}
		}
	case methodSamplingCreateMessage:
		c.Sampling = &SamplingCapability{}
		var p CreateMessageParams
		if convertParams(req.Params, &p) == nil {
			if p.Tools != nil || p.ToolChoice != nil {
				c.Sampling.Tools = &struct{}{}
			}
			if p.IncludeContext != "" && p.IncludeContext != includeContextNone {
				c.Sampling.Context = &struct{}{}
			}
		}
	case methodRootsList:
		c.Roots = &RootsCapability{}
	}
	return c
}

// missingFor returns what of need the declared capabilities lack, and
// whether anything is missing.
func missingFor(need, have ClientCapabilities) (ClientCapabilities, bool) {
	var miss ClientCapabilities
	any := false
	if need.Elicitation != nil {
		switch {
		case have.Elicitation == nil:
			miss.Elicitation, any = need.Elicitation, true
		case need.Elicitation.URL != nil && have.Elicitation.URL == nil:
			miss.Elicitation, any = &ElicitationCapability{URL: &struct{}{}}, true
		}
	}
	if need.Sampling != nil {
		switch {
		case have.Sampling == nil:
			miss.Sampling, any = need.Sampling, true
		case need.Sampling.Tools != nil && have.Sampling.Tools == nil, need.Sampling.Context != nil && have.Sampling.Context == nil:
			miss.Sampling, any = need.Sampling, true
		}
	}
	if need.Roots != nil && have.Roots == nil {
		miss.Roots, any = need.Roots, true
	}
	return miss, any
}

// modernInputRequired answers a modern request with an input_required result:
// the requests (each checked against the capabilities the request
// declared: one it lacks is refused with -32021) and the handler's state,
// sealed. A legacy request never gets here (withInput asked the client).
func (r *responder) modernInputRequired(ir *InputRequiredError) {
	if mod := r.modern(); mod == nil || !mod.bound { // nil: refused before its _meta was read
		r.error(&Error{Code: CodeInternalError, Message: "Internal error: the handler needs input from the client, which this request cannot ask for"})
		return
	}
	if len(ir.Requests) == 0 && ir.State == nil {
		r.error(&Error{Code: CodeInternalError, Message: "Internal error: the handler asked for input without requests or state"})
		return
	}
	var need ClientCapabilities
	keys := make(map[string]string, len(ir.Requests))
	for k, req := range ir.Requests {
		switch req.Method {
		case methodElicitationCreate, methodSamplingCreateMessage, methodRootsList:
		default:
			r.error(&Error{Code: CodeInternalError, Message: "Internal error: input request " + quote(k) + " has method " + quote(req.Method) +
				" (want elicitation/create, sampling/createMessage or roots/list)"})
			return
		}
		mergeCaps(&need, requiredFor(req))
		keys[k] = req.Method
	}
	if miss, ok := missingFor(need, r.modern().meta.ClientCapabilities); ok {
		r.error(MissingCapabilityError(miss, "Missing required client capability: the request needs input the client did not declare it can give"))
		return
	}
	st := r.modern().bind
	if st.Digest == "" {
		st.Digest = argsDigest(r.modern().bindArgs)
	}
	st.Keys, st.State = keys, ir.State
	reqs := ir.Requests
	if reqs != nil {
		reqs = make(map[string]InputRequest, len(ir.Requests))
		for k, q := range ir.Requests {
			if q.Params == nil {
				q.Params = struct{}{}
			}
			reqs[k] = q
		}
	}
	r.result(&inputRequiredResult{ResultType: resultTypeInputRequired, InputRequests: reqs, RequestState: r.ss.server.sealState(&st)})
}

func mergeCaps(dst *ClientCapabilities, c ClientCapabilities) {
	if c.Elicitation != nil {
		if dst.Elicitation == nil {
			dst.Elicitation = &ElicitationCapability{}
		}
		if c.Elicitation.URL != nil {
			dst.Elicitation.URL = c.Elicitation.URL
		}
	}
	if c.Sampling != nil {
		if dst.Sampling == nil {
			dst.Sampling = &SamplingCapability{}
		}
		if c.Sampling.Tools != nil {
			dst.Sampling.Tools = c.Sampling.Tools
		}
		if c.Sampling.Context != nil {
			dst.Sampling.Context = c.Sampling.Context
		}
	}
	if c.Roots != nil {
		dst.Roots = c.Roots
	}
}

// sourceAnswer is the answer of a feature source's method (a prompt's
// GetPrompt, a resource's ReadResource) run in an input round: an
// *InputRequiredError asks the client for input, another error is the
// one fail maps it to, and no result with no error is an internal error
// naming the kind of source.
func sourceAnswer[T any](res *T, err error, fail func(error) *Error, kind string) (any, error) {
	var ir *InputRequiredError
	switch {
	case errors.As(err, &ir):
		return nil, ir
	case err != nil:
		return nil, fail(err)
	case res == nil:
		return nil, &Error{Code: CodeInternalError, Message: "Internal error: " + kind + " source returned no result"}
	}
	return res, nil
}
