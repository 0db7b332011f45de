package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/revision"
)

// The Client at revision 2026-07-28 ("modern"): with
// ClientOptions.ProtocolVersion set to Version20260728, Connect calls
// server/discover instead of the initialize handshake, and every request
// carries the revision, the client's capabilities and clientInfo (and
// ClientOptions.LogLevel, when set) in params._meta. Results lose their
// resultType; an input-required result of tools/call, prompts/get or
// resources/read is fulfilled with the client's handlers (OnElicitation,
// OnSampling, Roots or OnListRoots) and the request is sent again with the
// answers, until the server completes it. Subscriptions replace
// resources/subscribe and the GET stream: see Client.Listen.

// defaultMaxInputRounds is how many times a modern request is sent again
// with inputResponses before the client gives up (ClientOptions.MaxInputRounds).
const defaultMaxInputRounds = 8

// ErrMethodRemoved is matched (errors.Is) by the error of a Client method
// whose protocol method revision 2026-07-28 removed (Ping,
// SetLoggingLevel, Subscribe, Unsubscribe, and the 2025-11-25 tasks'
// CallToolAsTask, TaskResult, ListTasks, ListAllTasks) on a client of
// that revision; nothing is sent.
var ErrMethodRemoved = errors.New("mcp: method removed in protocol revision " + Version20260728)

// ErrNeedsVersion20260728 is matched (errors.Is) by the error of a Client
// method that exists only at revision 2026-07-28 (Listen, PollTask,
// UpdateTask) on a connection of a 2025 revision, and, built with the tag
// keel_omit2025, by the error of Connect when ClientOptions.ProtocolVersion
// names another revision than 2026-07-28.
var ErrNeedsVersion20260728 = errors.New("mcp: method requires protocol revision " + Version20260728)

// modernState is the Client's machinery for revision 2026-07-28: the
// _meta every request carries, server/discover, requests whose
// input_required results it fulfils (with the handlers of clientSide),
// subscriptions (client_rev2026_listen.go) and the checks of the Client
// methods one revision family lacks.
type modernState struct {
	on   bool           // ClientOptions.ProtocolVersion is modern
	opts *ClientOptions // the Client's, read-only
	log  *slog.Logger
	side *clientSide               // answers input requests (client_handlers.go)
	meta map[string]jsontext.Value // the _meta every request carries

	cn     *conn                         // set by connect
	cancel func(id int64, reason string) // notifications/cancelled naming the revision

	disc atomic.Pointer[DiscoverResult]    // the server/discover result
	mu   sync.Mutex                        // guards acks
	acks map[int64]chan *listenAcknowledge // listen requests awaiting their ack
}

// inputMethods are the methods whose results may be input_required.
var inputMethods = map[string]bool{methodToolsCall: true, methodPromptsGet: true, methodResourcesRead: true}

// setup prepares the per-request _meta of a modern client (o is final:
// handler capabilities are declared); side answers its input requests.
func (m *modernState) setup(o *ClientOptions, log *slog.Logger, side *clientSide) {
	m.opts, m.log, m.side = o, log, side
	if !revision.ServedPerRequest(o.ProtocolVersion) {
		return
	}
	m.on = true
	caps := o.Capabilities
	caps.Tasks = nil // no core tasks at 2026-07-28 (see ExtensionTasks)
	if caps.Roots != nil {
		caps.Roots = &RootsCapability{} // roots list_changed is gone
	}
	m.meta = map[string]jsontext.Value{}
	put := func(k string, v any) {
		b, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
		if err != nil { // only a user's Experimental or Extensions value can fail
			log.Error("mcp: encoding request _meta", "key", k, "error", err)
			b = []byte("{}")
		}
		m.meta[k] = b
	}
	put(revision.MetaProtocolVersion, o.ProtocolVersion)
	put(revision.MetaClientCapabilities, caps)
	put(revision.MetaClientInfo, Implementation{Name: o.Name, Version: o.Version, Title: o.Title})
	if o.LogLevel != "" {
		put(revision.MetaLogLevel, o.LogLevel)
	}
}

// connect makes the requests go over cn.
func (m *modernState) connect(cn *conn) {
	m.cn, m.cancel = cn, cancelSender(cn, m.opts.ProtocolVersion)
}

// discover sends server/discover and checks that the server supports the
// client's revision; it keeps the result (see Client.DiscoverResult) and
// returns the InitializeResult built from it. A -32022 answer is returned
// as *Error.
func (m *modernState) discover(ctx context.Context) (*InitializeResult, error) {
	var res DiscoverResult
	if err := m.call(ctx, methodServerDiscover, nil, &res); err != nil {
		return nil, err
	}
	v := m.opts.ProtocolVersion
	if !slices.Contains(res.SupportedVersions, v) {
		return nil, fmt.Errorf("mcp: the server does not support protocol revision %s (it supports: %s)", v, strings.Join(res.SupportedVersions, ", "))
	}
	init := &InitializeResult{ProtocolVersion: v, Capabilities: res.Capabilities, Instructions: res.Instructions, Meta: res.Meta}
	if info, ok := res.Meta[revision.MetaServerInfo]; ok {
		if b, err := jsonv2.Marshal(info); err == nil {
			_ = jsonv2.Unmarshal(b, &init.ServerInfo)
		}
	}
	m.disc.Store(&res)
	return init, nil
}

// DiscoverResult returns the server's answer to server/discover (nil before
// Connect, and on a connection of a 2025 revision). A 2026-07-28
// connection also has an InitializeResult, built from it: ProtocolVersion
// is the client's revision, ServerInfo comes from _meta[MetaServerInfo].
func (c *Client) DiscoverResult() *DiscoverResult { return c.mod.disc.Load() }

// withRequestMeta returns params as a JSON object whose _meta holds the
// client's per-request keys; those the caller's _meta already has are kept.
func (m *modernState) withRequestMeta(method string, params any) (map[string]jsontext.Value, error) {
	obj := map[string]jsontext.Value{}
	if params != nil {
		b, err := jsonv2.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("mcp: encoding %s params: %w", method, err)
		}
		if v := jsontext.Value(b); v.Kind() != 'n' {
			if v.Kind() != '{' {
				return nil, fmt.Errorf("mcp: %s params must be a JSON object", method)
			}
			if err := jsonv2.Unmarshal(b, &obj); err != nil {
				return nil, fmt.Errorf("mcp: encoding %s params: %w", method, err)
			}
		}
	}
	meta := map[string]jsontext.Value{}
	if raw, ok := obj["_meta"]; ok && raw.Kind() != 'n' {
		if err := jsonv2.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("mcp: %s params: _meta must be a JSON object: %w", method, err)
		}
	}
	for k, v := range m.meta {
		if _, ok := meta[k]; !ok {
			meta[k] = v
		}
	}
	b, err := jsonv2.Marshal(meta, jsonv2.Deterministic(true))
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return obj, nil
}

// call sends a modern request and decodes its result into result (may be
// nil), fulfilling input-required results on the way.
func (m *modernState) call(ctx context.Context, method string, params, result any) error {
	obj, err := m.withRequestMeta(method, params)
	if err != nil {
		return err
	}
	rounds := m.opts.MaxInputRounds
	for round := 0; ; round++ {
		wire, err := jsonv2.Marshal(obj, jsonv2.Deterministic(true))
		if err != nil {
			return fmt.Errorf("mcp: encoding %s params: %w", method, err)
		}
		var raw jsontext.Value
		if err := m.cn.call(ctx, method, jsontext.Value(wire), &raw, m.cancel); err != nil {
			return err
		}
		rt, body, err := splitResultType(raw)
		if err != nil {
			return fmt.Errorf("mcp: %s result: %w", method, err)
		}
		switch rt {
		case "", resultTypeComplete: // absent: a server of an earlier revision
		case resultTypeInputRequired:
			if !inputMethods[method] {
				return fmt.Errorf("mcp: %s: the server answered input_required, which only tools/call, prompts/get and resources/read may", method)
			}
			if round >= rounds {
				return fmt.Errorf("mcp: %s: the server still asks for input after %d rounds", method, rounds)
			}
			responses, state, err := m.fulfilInput(ctx, method, body)
			if err != nil {
				return err
			}
			delete(obj, "inputResponses")
			delete(obj, "requestState")
			if len(responses) > 0 {
				b, err := jsonv2.Marshal(responses, jsonv2.Deterministic(true))
				if err != nil {
					return fmt.Errorf("mcp: %s: encoding inputResponses: %w", method, err)
				}
				obj["inputResponses"] = b
			}
			if state != nil {
				obj["requestState"] = state
			}
			continue
		case resultTypeTask:
			if _, ok := m.opts.Capabilities.Extensions[ExtensionTasks]; !ok {
				return fmt.Errorf("mcp: %s: the server answered with a task, but the client did not declare the %s extension", method, ExtensionTasks)
			}
			if _, ok := result.(*CallToolResult); ok {
				return taskStarted(raw) // CallTool: a *TaskStartedError (client_rev2026_tasks.go)
			}
			body = raw // the caller needs resultType to tell a task from a result
		default:
			return fmt.Errorf("mcp: %s: unknown resultType %q", method, rt)
		}
		if result == nil {
			return nil
		}
		if err := jsonv2.Unmarshal(body, result); err != nil {
			return fmt.Errorf("mcp: decoding %s result: %w", method, err)
		}
		return nil
	}
}

// splitResultType returns the resultType of a result object ("" when
// absent) and the result without it.
func splitResultType(raw jsontext.Value) (string, jsontext.Value, error) {
	if raw.Kind() != '{' {
		return "", nil, errors.New("not a JSON object")
	}
	var obj map[string]jsontext.Value
	if err := jsonv2.Unmarshal(raw, &obj); err != nil {
		return "", nil, err
	}
	rt, ok := obj["resultType"]
	if !ok {
		return "", raw, nil
	}
	var s string
	if err := jsonv2.Unmarshal(rt, &s); err != nil {
		return "", nil, fmt.Errorf("resultType is not a string: %s", rt)
	}
	delete(obj, "resultType")
	b, err := jsonv2.Marshal(obj, jsonv2.Deterministic(true))
	return s, b, err
}

// fulfilInput answers the inputRequests of an input_required result with
// the client's handlers, in key order. It returns the answers by key and
// the raw requestState (nil when absent).
func (m *modernState) fulfilInput(ctx context.Context, method string, body jsontext.Value) (map[string]json.RawMessage, jsontext.Value, error) {
	var ir struct {
		InputRequests map[string]struct {
			Method string         `json:"method"`
			Params jsontext.Value `json:"params"`
		} `json:"inputRequests"`
		RequestState jsontext.Value `json:"requestState"`
	}
	if err := jsonv2.Unmarshal(body, &ir); err != nil {
		return nil, nil, fmt.Errorf("mcp: %s: malformed input_required result: %w", method, err)
	}
	if ir.RequestState != nil && ir.RequestState.Kind() != '"' {
		return nil, nil, fmt.Errorf("mcp: %s: malformed input_required result: requestState is not a string", method)
	}
	if len(ir.InputRequests) == 0 && ir.RequestState == nil {
		return nil, nil, fmt.Errorf("mcp: %s: input_required result has neither inputRequests nor requestState", method)
	}
	reqs := make(map[string]InputRequest, len(ir.InputRequests))
	for k, r := range ir.InputRequests {
		reqs[k] = InputRequest{Method: r.Method}
		if r.Params != nil {
			reqs[k] = InputRequest{Method: r.Method, Params: r.Params} // raw: re-encoded as sent
		}
	}
	out, err := m.answerInputs(ctx, method, reqs)
	if err != nil {
		return nil, nil, err
	}
	return out, ir.RequestState, nil
}

// answerInputs answers input requests (of an input_required result, or of
// a task: what names them in errors) with the client's handlers
// (clientSide.answer), in key order, and returns the answers by key.
func (m *modernState) answerInputs(ctx context.Context, what string, reqs map[string]InputRequest) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(reqs))
	for _, k := range sortedKeys(reqs) {
		req := reqs[k]
		var params jsontext.Value // nil when the request has none
		if req.Params != nil {
			var err error
			if params, err = jsonv2.Marshal(req.Params); err != nil {
				return nil, fmt.Errorf("mcp: %s: input request %q: %w", what, k, err)
			}
		}
		res, err := m.side.answer(ctx, req.Method, params)
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: input request %q (%s): %w", what, k, req.Method, err)
		}
		if out[k], err = jsonv2.Marshal(res); err != nil {
			return nil, fmt.Errorf("mcp: %s: encoding the answer to input request %q: %w", what, k, err)
		}
	}
	return out, nil
}

// What a 2026-07-28 client does instead of the Client methods whose
// protocol method that revision removed (the hints of methodRemoved).
const (
	hintSetLevel       = "set ClientOptions.LogLevel instead"
	hintSubscribe      = "use Client.Listen with SubscriptionFilter.ResourceSubscriptions"
	hintUnsubscribe    = "end the Subscription of Client.Listen"
	hintTaskResult     = "wait with Client.WaitTask"
	hintCallToolAsTask = "declare the " + ExtensionTasks + " extension and call CallTool: a task comes back as a *TaskStartedError"
)

// removed returns methodRemoved(method, hint) on a 2026-07-28 client; nil
// otherwise.
func (m *modernState) removed(method, hint string) error {
	if !m.on {
		return nil
	}
	return methodRemoved(method, hint)
}

// methodRemoved returns the error, wrapping ErrMethodRemoved, of a Client
// method whose protocol method revision 2026-07-28 removed (hint, if any,
// says what to do instead).
func methodRemoved(method, hint string) error {
	if hint != "" {
		return fmt.Errorf("%w: %s (%s)", ErrMethodRemoved, method, hint)
	}
	return fmt.Errorf("%w: %s", ErrMethodRemoved, method)
}

// need refuses method, which exists only at revision 2026-07-28, on a
// legacy connection (of revision negotiated) with an error wrapping
// ErrNeedsVersion20260728.
func (m *modernState) need(method, negotiated string) error {
	if !m.on {
		return fmt.Errorf("%w: %s (negotiated: %s)", ErrNeedsVersion20260728, method, negotiated)
	}
	return nil
}
