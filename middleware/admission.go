package middleware

import (
	"context"
	"errors"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// Admission: one mechanism gates tools, at list time and at call time. An
// AdmissionPolicy looks at a tool's metadata and at the request (its
// session, transport, call) and admits the tool or not:
//
//   - at list time (Chain.ListTools, PhaseList) a tool that is not admitted
//     is left out of tools/list;
//   - at call time (the Admit stage, PhaseCall) a call of a tool that is
//     not admitted is refused before it takes a concurrency slot or is
//     validated, audited or dispatched.
//
// How a refused call is answered depends on the policy's error:
//
//   - a *mcp.StructuredError with code NOT_FOUND (see Hidden): the tool
//     looks unknown — the answer is exactly that of an unregistered tool,
//     JSON-RPC -32602 with a NOT_FOUND StructuredError in error.data;
//   - any other *mcp.StructuredError (see Unauthorized and Denied): an
//     isError result carrying it, with the call's correlationId and runId;
//   - a *mcp.Error: that JSON-RPC error;
//   - any other error: an UNAUTHORIZED isError result; its text reaches
//     the client only with mcp.ServerOptions.ExposeErrorText, and is
//     logged (mcp.ClientErrorText), since it may hold anything.
//
// The built-in policies: ModePolicy (the runtime modes FULL, READONLY, TEST,
// MINIMAL), TrustPolicy (destructive tools run only while TRUSTED) and
// Admin (the administrative tools); AllOf composes them. Install a policy with
// StandardOptions.Admission or Chain.Admit, which apply it at both times.

// AdmissionPhase says when a policy is consulted.
type AdmissionPhase int

// Admission phases.
const (
	// PhaseList: tools/list. A tool that is not admitted is not listed.
	PhaseList AdmissionPhase = iota + 1
	// PhaseCall: tools/call. A call of a tool that is not admitted is
	// refused.
	PhaseCall
)

// String returns "list" or "call".
func (p AdmissionPhase) String() string {
	switch p {
	case PhaseList:
		return "list"
	case PhaseCall:
		return "call"
	}
	return "unknown"
}

// AdmissionContext is what a policy knows about the request besides its
// context (which carries, over HTTP with streamhttp.RequireBearer, the
// verified token: mcp.TokenInfoFromContext).
type AdmissionContext struct {
	// Phase is PhaseList or PhaseCall.
	Phase AdmissionPhase
	// Session is the connection the request arrived on (nil outside a
	// Server); see TransportKind. What the request itself states is in
	// ProtocolVersion and ClientInfo.
	Session *mcp.Session
	// ProtocolVersion is the revision the request is served at
	// (mcp.Request.ProtocolVersion): its own for a 2026-07-28 request,
	// else the one its session negotiated. It is "" when ctx carries no
	// request (mcp.RequestFromContext is nil: the Chain called outside a
	// request, even with a Session in ctx, whose ProtocolVersion is the
	// connection's kind, not a request's revision).
	ProtocolVersion string
	// ClientInfo is the client's self-reported name and version for this
	// request (mcp.Request.ClientInfo): its _meta's for a 2026-07-28
	// request (zero when it names none), else the session's initialize;
	// zero when ctx carries no request. The client says it: it proves
	// nothing.
	ClientInfo mcp.Implementation
	// Call is the tools/call being admitted (PhaseCall only; its Meta is
	// the request's _meta).
	Call *Call
}

// admissionContext returns the AdmissionContext of the request ctx
// belongs to, at phase, for call (nil at PhaseList): the revision and
// client info are the request's (mcp.RequestFromContext), and zero when
// ctx carries none.
func admissionContext(ctx context.Context, phase AdmissionPhase, ss *mcp.Session, call *Call) AdmissionContext {
	ac := AdmissionContext{Phase: phase, Session: ss, Call: call}
	if req := mcp.RequestFromContext(ctx); req != nil {
		ac.ProtocolVersion, ac.ClientInfo = req.ProtocolVersion(), req.ClientInfo()
	}
	return ac
}

// TransportKind returns the kind of the session's transport ("stdio" for
// the process's own standard streams only, "stream" for the same framing
// over another connection, "memory", "http"), or "" without a session.
func (ac AdmissionContext) TransportKind() string {
	if ac.Session == nil {
		return ""
	}
	return ac.Session.TransportKind()
}

// AdmissionPolicy decides which tools a request may use. Admit returns nil
// to admit t, or the reason it is not admitted (see the package
// documentation above for how errors are answered). It is called for every
// tool of every tools/list and for every tools/call, concurrently: keep it
// fast and safe for concurrent use. A policy must give the same answer at
// both phases for the same request, unless the call carries more
// information (a token in its _meta, say) or the policy deliberately lists
// tools it refuses to run (TrustPolicy).
type AdmissionPolicy interface {
	Admit(ctx context.Context, t *registry.Tool, ac AdmissionContext) error
}

// AdmissionFunc adapts a function to AdmissionPolicy.
type AdmissionFunc func(ctx context.Context, t *registry.Tool, ac AdmissionContext) error

// Admit calls f.
func (f AdmissionFunc) Admit(ctx context.Context, t *registry.Tool, ac AdmissionContext) error {
	return f(ctx, t, ac)
}

// Hidden returns the error of a policy that hides t: a NOT_FOUND
// StructuredError, so a call of t is answered exactly like a call of an
// unregistered tool. reason is for logs and tests; it never reaches the
// client.
func Hidden(t *registry.Tool, reason string) *mcp.StructuredError {
	return &mcp.StructuredError{Code: mcp.ErrNotFound, Message: reason, Details: map[string]any{"tool": t.Name()}}
}

// Unauthorized returns the error of a policy that refuses t because the
// caller has not proved who it is, or proved it with a credential that is
// refused (a missing or wrong token), with a reason the client may see: an
// UNAUTHORIZED StructuredError with details {"tool": name, "reason":
// reason} plus extra.
func Unauthorized(t *registry.Tool, reason, message string, extra map[string]any) *mcp.StructuredError {
	d := map[string]any{"tool": t.Name(), "reason": reason}
	for k, v := range extra {
		d[k] = v
	}
	return &mcp.StructuredError{Code: mcp.ErrUnauthorized, Message: message, Details: d}
}

// Denied returns the error of a policy that does not permit t to this
// caller, or not now, whoever asks (the caller's credentials, if any, are
// not the problem): a PERMISSION_DENIED StructuredError with details
// {"tool": name, "reason": reason} plus extra. Use Unauthorized when the
// caller has not proved who it is, or with a credential that is refused.
func Denied(t *registry.Tool, reason, message string, extra map[string]any) *mcp.StructuredError {
	se := Unauthorized(t, reason, message, extra)
	se.Code = mcp.ErrPermissionDenied
	return se
}

// AllOf returns a policy that admits a tool when every policy does; the
// first refusal (in the order given) is the answer. Nil policies are
// skipped; with none left it admits everything.
func AllOf(policies ...AdmissionPolicy) AdmissionPolicy {
	var ps allOf
	for _, p := range policies {
		switch p := p.(type) {
		case nil:
		case allOf:
			ps = append(ps, p...)
		default:
			ps = append(ps, p)
		}
	}
	if len(ps) == 1 {
		return ps[0]
	}
	return ps
}

type allOf []AdmissionPolicy

func (ps allOf) Admit(ctx context.Context, t *registry.Tool, ac AdmissionContext) error {
	for _, p := range ps {
		if err := p.Admit(ctx, t, ac); err != nil {
			return err
		}
	}
	return nil
}

// Admit returns the call-time stage of policy p: a call of a tool p does not
// admit is refused (see the package documentation for the answers). It
// resolves the tool first, so an unknown tool still gets -32602. Standard
// places it right after Lookup. Admit alone does not filter tools/list:
// install policies with Chain.Admit (or StandardOptions.Admission), which
// does both. A nil p admits everything.
func Admit(p AdmissionPolicy) Middleware {
	return func(next Handler) Handler {
		if p == nil {
			return next
		}
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			t, err := c.Tool()
			if err != nil {
				return nil, err
			}
			if err := p.Admit(ctx, t, admissionContext(ctx, PhaseCall, c.Session, c)); err != nil {
				return nil, c.refusal(err)
			}
			return next(ctx, c)
		}
	}
}

// refusal turns a policy's error into the call's answer.
func (c *Call) refusal(err error) error {
	var se *mcp.StructuredError
	if errors.As(err, &se) {
		if se.Code == mcp.ErrNotFound {
			c.Log().Debug("middleware: tool hidden by the admission policy", "tool", c.Name, "reason", se.Message)
			return registry.UnknownToolError(c.ToolCall)
		}
		cp := *se
		c.fillIDs(&cp)
		c.Log().Info("middleware: call refused by the admission policy", "tool", c.Name, "code", string(cp.Code), "reason", cp.Message)
		return &cp
	}
	var rpcErr *mcp.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	// A plain error's text is the policy's own and may hold anything (a
	// database error, a path): masked as a handler's plain error is.
	msg := mcp.ClientErrorText(c.ToolCall, "admission of tool "+quote(c.Name), err, refusedMessage)
	return c.toolError(mcp.ErrUnauthorized, msg, map[string]any{"tool": c.Name})
}

// refusedMessage is what a client is told of an admission policy's plain
// error while error text is masked.
const refusedMessage = "call refused by the admission policy (its reason is in the server's log under the correlationId)"

// admitted returns the tools p admits for a tools/list with context ctx.
func admitted(ctx context.Context, p AdmissionPolicy, tools []listedTool) []*mcp.Tool {
	ac := admissionContext(ctx, PhaseList, mcp.SessionFromContext(ctx), nil)
	out := make([]*mcp.Tool, 0, len(tools))
	for _, lt := range tools {
		if p == nil || p.Admit(ctx, lt.tool, ac) == nil {
			out = append(out, lt.def)
		}
	}
	return out
}

// listedTool is a tool as tools/list shows it: its wire definition (whose
// name may differ from the registry's, see Admin) and the registered tool.
type listedTool struct {
	def  *mcp.Tool
	tool *registry.Tool
}
