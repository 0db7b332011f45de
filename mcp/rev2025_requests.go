//go:build !keel_omit2025

package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/revision"
)

// need returns a *CapabilityError unless the revision is at least min
// (empty: any) and declared is true.
func (ss *Session) need(method, capability, min string, declared bool) error {
	v := ss.negotiated()
	if min != "" && !revision.AtLeast(v, min) {
		return &CapabilityError{Method: method, Capability: capability, Revision: v, MinRevision: min}
	}
	if !declared {
		return &CapabilityError{Method: method, Capability: capability, Revision: v}
	}
	return nil
}

// call sends a request to the client and waits for its response, at most
// RequestTimeout; when it stops waiting (timeout, ctx) it sends
// notifications/cancelled for the request.
func (ss *Session) call(ctx context.Context, method string, params, result any) error {
	if ss.modernOnly || modernFromContext(ctx) != nil {
		return fmt.Errorf("mcp: %s not sent: %w", method, ErrNoClientRequests)
	}
	if ss.currentState() != stateRunning {
		return fmt.Errorf("mcp: %s not sent: the session is %s, not RUNNING", method, ss.currentState())
	}
	params, done, err := ss.server.tasks.taskRequest(ss, ctx, method, params) // related-task _meta, input_required (task_server.go)
	if err != nil {
		return err
	}
	defer done()
	d := ss.server.opts.RequestTimeout
	tctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf("%s: no response from the client within %v", method, d))
	defer cancel()
	// A tools/call running on the reading goroutine hands reading over now:
	// the response it waits for must be read by someone else.
	ss.rd.takeOverReading()
	err = ss.conn.call(tctx, method, params, result, func(id int64, reason string) {
		raw := jsontext.Value(strconv.AppendInt(nil, id, 10))
		nctx, ncancel := context.WithTimeout(context.WithoutCancel(ctx), logSendTimeout)
		defer ncancel()
		if err := ss.conn.notify(nctx, notificationCancelled, &cancelledParams{RequestID: raw, Reason: reason}); err != nil && !isClosed(err) {
			ss.log.Warn("mcp: sending notifications/cancelled failed", "method", method, "error", err)
		}
	})
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		return fmt.Errorf("mcp: %w: %w", context.Cause(tctx), context.DeadlineExceeded)
	}
	return err
}

// CreateMessage asks the client to sample its language model
// (sampling/createMessage). The client must have declared sampling; Tools
// and ToolChoice need sampling.tools (2025-11-25), IncludeContext
// thisServer or allServers needs sampling.context in 2025-11-25 (earlier
// revisions have no such sub-capability). Content the negotiated revision
// cannot carry is an error (several blocks, tool_use and tool_result before
// 2025-11-25; audio before 2025-03-26); members it lacks are left out.
// Task-augmented sampling (Task) is not supported here. A client that
// rejects the request answers with an error, returned as *Error.
func (ss *Session) CreateMessage(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error) {
	if err := ss.modernRefusal(ctx, methodSamplingCreateMessage); err != nil {
		return nil, err
	}
	const m = methodSamplingCreateMessage
	caps := ss.clientCapabilities()
	if err := ss.need(m, "sampling", "", caps.Sampling != nil); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("mcp: CreateMessage: nil params")
	}
	if p.Tools != nil || p.ToolChoice != nil {
		if err := ss.need(m, "sampling.tools", Version20251125, caps.Sampling.Tools != nil); err != nil {
			return nil, err
		}
	}
	v := ss.negotiated()
	switch p.IncludeContext {
	case "", includeContextNone, includeContextThisServer, includeContextAllServers:
	default:
		return nil, fmt.Errorf("mcp: CreateMessage: unknown IncludeContext %q", p.IncludeContext)
	}
	if (p.IncludeContext == includeContextThisServer || p.IncludeContext == includeContextAllServers) && revision.AtLeast(v, Version20251125) {
		if err := ss.need(m, "sampling.context", "", caps.Sampling.Context != nil); err != nil {
			return nil, err
		}
	}
	if p.Task != nil {
		return nil, errors.New("mcp: CreateMessage: task-augmented sampling is not supported")
	}
	if len(p.Messages) == 0 {
		return nil, errors.New("mcp: CreateMessage: no messages")
	}
	if p.MaxTokens <= 0 {
		return nil, errors.New("mcp: CreateMessage: MaxTokens must be positive")
	}
	params, err := downgradeCreateMessage(p, v)
	if err != nil {
		return nil, err
	}
	var res CreateMessageResult
	if err := ss.call(ctx, m, params, &res); err != nil {
		return nil, err
	}
	if res.Role == "" || res.Content == nil {
		return nil, errors.New("mcp: sampling/createMessage: the client's result lacks role or content")
	}
	return &res, nil
}

// downgradeCreateMessage returns p fit for revision v, or an error naming
// content v cannot carry. p is not modified.
func downgradeCreateMessage(p *CreateMessageParams, v string) (*CreateMessageParams, error) {
	if revision.AtLeast(v, Version20251125) {
		return p, nil
	}
	c := *p
	c.Messages = make([]SamplingMessage, len(p.Messages))
	for i, msg := range p.Messages {
		if len(msg.Content) != 1 {
			return nil, fmt.Errorf("mcp: CreateMessage: message %d has %d content blocks; protocol revision %s allows exactly one", i, len(msg.Content), v)
		}
		switch t := msg.Content[0].Type; {
		case t == ContentToolUse || t == ContentToolResult:
			return nil, fmt.Errorf("mcp: CreateMessage: message %d: %s content requires protocol revision %s or later (negotiated: %s)", i, t, Version20251125, v)
		case t == ContentAudio && !revision.AtLeast(v, Version20250326):
			return nil, fmt.Errorf("mcp: CreateMessage: message %d: audio content requires protocol revision %s or later (negotiated: %s)", i, Version20250326, v)
		}
		b := msg.Content[0]
		if !revision.AtLeast(v, Version20250618) { // _meta and lastModified are 2025-06-18
			b.Meta = nil
			if b.Annotations != nil && b.Annotations.LastModified != "" {
				a := *b.Annotations
				a.LastModified = ""
				b.Annotations = &a
			}
		}
		msg.Content, msg.Meta = SamplingMessageContent{b}, nil
		c.Messages[i] = msg
	}
	return &c, nil
}

// Elicit asks the client to elicit information from the user
// (elicitation/create, 2025-06-18). Form mode (Mode "" or ElicitModeForm)
// needs the elicitation capability with form support (declared as
// elicitation.form, or as an empty elicitation object); URL mode
// (ElicitModeURL, 2025-11-25) needs elicitation.url and an ElicitationID.
// The result's Action tells whether the user accepted (Content then holds
// the form's values), declined or cancelled. Task-augmented elicitation
// (Task) is not supported here.
func (ss *Session) Elicit(ctx context.Context, p *ElicitParams) (*ElicitResult, error) {
	if err := ss.modernRefusal(ctx, methodElicitationCreate); err != nil {
		return nil, err
	}
	const m = methodElicitationCreate
	caps := ss.clientCapabilities()
	if err := ss.need(m, "elicitation", Version20250618, caps.Elicitation != nil); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("mcp: Elicit: nil params")
	}
	params := *p
	switch p.Mode {
	case "", ElicitModeForm:
		e := caps.Elicitation
		if err := ss.need(m, "elicitation.form", "", e.Form != nil || e.URL == nil); err != nil {
			return nil, err
		}
		if len(p.RequestedSchema) > 0 && jsontext.Value(p.RequestedSchema).Kind() != '{' {
			return nil, errors.New("mcp: Elicit: RequestedSchema must be a JSON object schema")
		}
		if !revision.AtLeast(ss.negotiated(), Version20251125) {
			params.Mode = "" // 2025-06-18 has no mode member
		}
	case ElicitModeURL:
		if err := ss.need(m, "elicitation.url", Version20251125, caps.Elicitation.URL != nil); err != nil {
			return nil, err
		}
		if p.URL == "" || p.ElicitationID == "" {
			return nil, errors.New("mcp: Elicit: URL mode requires URL and ElicitationID")
		}
	default:
		return nil, fmt.Errorf("mcp: Elicit: unknown mode %q", p.Mode)
	}
	if p.Task != nil {
		return nil, errors.New("mcp: Elicit: task-augmented elicitation is not supported")
	}
	var res ElicitResult
	if err := ss.call(ctx, m, &params, &res); err != nil {
		return nil, err
	}
	switch res.Action {
	case ElicitAccept, ElicitDecline, ElicitCancel:
	default:
		return nil, fmt.Errorf("mcp: elicitation/create: the client answered with unknown action %q", res.Action)
	}
	return &res, nil
}

// NotifyElicitationComplete tells the client that the out-of-band
// interaction of the URL elicitation elicitationID has finished
// (notifications/elicitation/complete, 2025-11-25). Like Elicit in URL
// mode it needs the client's elicitation.url capability.
func (ss *Session) NotifyElicitationComplete(ctx context.Context, elicitationID string) error {
	caps := ss.clientCapabilities()
	if err := ss.need(notificationElicitationComplete, "elicitation.url", Version20251125,
		caps.Elicitation != nil && caps.Elicitation.URL != nil); err != nil {
		return err
	}
	return ss.conn.notify(ctx, notificationElicitationComplete, &elicitationCompleteNotificationParams{ElicitationID: elicitationID})
}

// ListRoots asks the client for its roots (roots/list); the client must
// have declared roots. See ServerOptions.OnRootsListChanged to learn when
// they change.
func (ss *Session) ListRoots(ctx context.Context) ([]Root, error) {
	if err := ss.modernRefusal(ctx, methodRootsList); err != nil {
		return nil, err
	}
	caps := ss.clientCapabilities()
	if err := ss.need(methodRootsList, "roots", "", caps.Roots != nil); err != nil {
		return nil, err
	}
	var res ListRootsResult
	if err := ss.call(ctx, methodRootsList, nil, &res); err != nil {
		return nil, err
	}
	return res.Roots, nil
}

// Ping sends ping to the client and waits for its answer.
func (ss *Session) Ping(ctx context.Context) error {
	return ss.call(ctx, methodPing, nil, nil)
}

// handleRootsListChanged serves notifications/roots/list_changed.
func handleRootsListChanged(_ context.Context, req *Request) (any, error) {
	ss := req.Session
	f := ss.server.opts.OnRootsListChanged
	if f == nil {
		return nil, nil
	}
	if caps := ss.clientCapabilities(); caps.Roots == nil || ss.currentState() != stateRunning {
		ss.log.Warn("mcp: notifications/roots/list_changed ignored (roots not declared, or not RUNNING)")
		return nil, nil
	}
	fs := &state2025(ss).feat
	fs.rootsMu.Lock()
	if fs.rootsRunning {
		fs.rootsPending = true
		fs.rootsMu.Unlock()
		return nil, nil
	}
	fs.rootsRunning = true
	fs.rootsMu.Unlock()
	go ss.runRootsChanged(f)
	return nil, nil
}

// runRootsChanged calls f until no notification arrived during the last call.
func (ss *Session) runRootsChanged(f func(context.Context, *Session)) {
	fs := &state2025(ss).feat
	for {
		_, _ = guard(ss.log, "OnRootsListChanged", "", func() (any, error) {
			f(withSession(ss.ctx, ss), ss)
			return nil, nil
		})
		fs.rootsMu.Lock()
		if !fs.rootsPending || ss.ctx.Err() != nil {
			fs.rootsRunning = false
			fs.rootsMu.Unlock()
			return
		}
		fs.rootsPending = false
		fs.rootsMu.Unlock()
	}
}

// modernRefusal refuses a server-to-client request made while serving a
// 2026-07-28 request, or on a connection that serves only such requests
// (ErrNoClientRequests): checked before the capabilities, so that the
// error gives the true reason.
func (ss *Session) modernRefusal(ctx context.Context, method string) error {
	if modernFromContext(ctx) != nil || ss.ProtocolVersion() == Version20260728 {
		return fmt.Errorf("mcp: %s not sent: %w", method, ErrNoClientRequests)
	}
	return nil
}
