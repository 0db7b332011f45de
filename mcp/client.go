package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// ErrToolFailed is the code Client.CallTool reports for an isError result
// whose text is not a StructuredError (for example from another library's
// server).
const ErrToolFailed ErrorCode = "TOOL_ERROR"

// ClientOptions configure a Client (nil = defaults).
type ClientOptions struct {
	// Name and Version are the clientInfo sent in initialize
	// (default "keel-client", "0.0.0").
	Name    string
	Version string
	Title   string
	// ProtocolVersion is the revision requested (default Version20251125;
	// built with the tag keel_omit2025, Version20260728, the only revision
	// that build's Client speaks: Connect refuses another with an error
	// matching ErrNeedsVersion20260728). A 2025 revision is negotiated by
	// the initialize handshake and kept for the connection. Version20260728
	// makes the client stateless: Connect calls server/discover instead of
	// initialize, and every request carries the revision, Capabilities and
	// clientInfo in params._meta.
	ProtocolVersion string
	// KeepAlive, when positive, pings the server every KeepAlive after a
	// 2025 handshake (revision 2026-07-28 has no ping), each ping waiting at
	// most KeepAlive. A server that does not answer in time has its
	// transport closed: calls in flight and later fail, and KeepAliveErr
	// reports why (an error matching ErrPeerUnresponsive). Zero: no pings.
	KeepAlive time.Duration
	// LogLevel, at revision 2026-07-28, asks the server for
	// notifications/message at this level and above on every request
	// (_meta revision.MetaLogLevel; "" = no log messages). It replaces
	// SetLoggingLevel, which 2026-07-28 servers no longer offer; a request's
	// own _meta may set another level.
	LogLevel LoggingLevel
	// MaxInputRounds bounds how many times a 2026-07-28 request answered with
	// input_required is sent again with the answers (0 =
	// 8).
	MaxInputRounds int
	// Capabilities are declared to the server.
	Capabilities ClientCapabilities
	// Logger receives diagnostics (nil = slog.Default()).
	Logger *slog.Logger
	// MaxDepth bounds the nesting depth of incoming messages (default 64).
	MaxDepth int
	// OnNotification, if set, receives every notification from the server.
	// It runs on the client's read goroutine: return quickly.
	OnNotification func(method string, params json.RawMessage)
	// OnResourceUpdated receives the uri of each
	// notifications/resources/updated, OnListChanged the method of each
	// notifications/{tools,resources,prompts}/list_changed, before
	// OnNotification sees them. They run on
	// the client's read goroutine: return quickly.
	OnResourceUpdated func(uri string)
	OnListChanged     func(method string)

	// Handlers of the server's requests. Each runs on
	// its own goroutine; its ctx ends when the server cancels the request or
	// the client closes. Setting one declares its capability unless
	// Capabilities already does (set Capabilities to declare more, such as
	// sampling.tools or elicitation.url). An *Error returned is the answer
	// as is; any other error is answered with -32603.
	//
	// OnSampling answers sampling/createMessage (declares sampling).
	OnSampling func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error)
	// OnElicitation answers elicitation/create (declares elicitation, form mode).
	OnElicitation func(ctx context.Context, p *ElicitParams) (*ElicitResult, error)
	// Roots answer roots/list, unless OnListRoots is set, which answers
	// instead. Either (Roots even when empty, if not nil) declares roots
	// with listChanged: Client.SetRoots replaces the roots and notifies.
	Roots       []Root
	OnListRoots func(ctx context.Context) ([]Root, error)
	// OnLog receives notifications/message and OnProgress
	// notifications/progress (before OnNotification sees them). They run on
	// the client's read goroutine: return quickly.
	OnLog      func(*LoggingMessageNotificationParams)
	OnProgress func(*ProgressParams)
	// OnTaskStatus receives notifications/tasks/status (the 2025-11-25
	// tasks), before OnNotification sees it. It runs on the client's read
	// goroutine: return quickly.
	OnTaskStatus func(*TaskStatusNotificationParams)

	// When the server no longer knows the session (a Write fails with
	// transport.ErrSessionNotFound: HTTP 404 on streamable HTTP), the
	// client starts a new one, as the specification asks: it repeats the
	// initialize handshake and then sends the failed message once more.
	// What the old session held on the server (log level, resource
	// subscriptions, tasks) is not restored; OnReinitialized, if set, is
	// called with the new result after each such handshake (on the
	// goroutine of the call that found the session gone) to restore it.
	// DisableReinitialize returns the error to the caller instead.
	DisableReinitialize bool
	OnReinitialized     func(ctx context.Context, res *InitializeResult)

	// Middleware wraps every request and notification the client sends
	// through Call and Notify (and the typed methods built on them) and
	// every request the server sends it; the first listed is the
	// outermost. See ClientMiddleware.
	Middleware []ClientMiddleware
}

// Client is an MCP client: it connects to a server over any Transport,
// performs the initialize handshake and calls the server. It is what
// downstream tests use against a server over transport.NewPipe.
type Client struct {
	// Its parts are cut by concern, each in its own file; they share the
	// options (read-only once NewClient returns) and, from Connect, conn.
	opts ClientOptions
	log  *slog.Logger

	conn *conn                            // nil before Connect
	init atomic.Pointer[InitializeResult] // the server's answer (InitializeResult)
	in   clientReader                     // reads conn (client_reader.go)
	sess clientSession                    // the 2025 session (rev2025_client_session.go)
	side clientSide                       // server-to-client requests (client_handlers.go)
	mod  modernState                      // revision 2026-07-28 (client_rev2026.go)
	mw   clientChains                     // ClientOptions.Middleware (client_middleware.go)

	kaStop context.CancelFunc    // ends the keep-alive pinger (nil: none)
	kaDone chan struct{}         // closed when the pinger returns
	kaErr  atomic.Pointer[error] // why the pinger closed the transport
}

// NewClient returns an unconnected Client configured by opts.
func NewClient(opts *ClientOptions) *Client {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "keel-client"
	}
	if o.Version == "" {
		o.Version = "0.0.0"
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = clientDefaultVersion
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = jsonrpc.DefaultMaxDepth
	}
	if o.MaxInputRounds <= 0 {
		o.MaxInputRounds = defaultMaxInputRounds
	}
	declareHandlerCapabilities(&o)
	o.Middleware = slices.Clone(o.Middleware)
	c := &Client{opts: o, log: o.Logger}
	c.sess.setup(&c.opts, c.log, &c.init)
	c.side.opts, c.side.log, c.side.reqs.log = &c.opts, c.log, c.log
	c.mod.setup(&c.opts, c.log, &c.side)
	c.mw.setup(c)
	return c
}

// Connect starts reading from t, sends initialize and, once the server has
// answered with a revision this client supports, notifications/initialized.
// At revision 2026-07-28 (ClientOptions.ProtocolVersion) it sends
// server/discover instead and fails unless the server lists the revision
// among its supportedVersions; a -32022 answer is returned as *Error.
// On failure the transport is closed. Close ends the connection.
//
// Built with the tag keel_omit2025, a ProtocolVersion other than
// Version20260728 is refused before anything is sent, with an error
// matching ErrNeedsVersion20260728 (and t is closed, as on any failure).
func (c *Client) Connect(ctx context.Context, t transport.Transport) error {
	if t == nil {
		return errors.New("mcp: Connect: nil transport")
	}
	if c.conn != nil {
		return errors.New("mcp: client already connected")
	}
	if err := clientVersionRefused(c.opts.ProtocolVersion); err != nil {
		t.Close()
		return err
	}
	cn := newConn(t, c.opts.MaxDepth, c.log)
	c.conn = cn
	c.sess.connect(cn)
	c.mod.connect(cn)
	c.in = clientReader{cn: cn, opts: &c.opts, log: c.log, side: &c.side, mod: &c.mod, done: make(chan struct{})}
	go c.in.run()
	var (
		res *InitializeResult
		err error
	)
	if c.mod.on {
		res, err = c.mod.discover(ctx)
	} else {
		res, err = c.sess.handshake(ctx)
	}
	if err != nil {
		c.Close()
		return err
	}
	c.init.Store(res)
	if !c.mod.on {
		startKeepAlive(c) // rev2025_client_session.go
	}
	return nil
}

// KeepAliveErr returns why ClientOptions.KeepAlive closed the connection
// (an error matching ErrPeerUnresponsive), or nil.
func (c *Client) KeepAliveErr() error {
	if p := c.kaErr.Load(); p != nil {
		return *p
	}
	return nil
}

// cancelSender returns what tells the server, with notifications/cancelled,
// that the client stopped waiting for its request id. When modern (a
// revision) is set, the notification names it in _meta, so that an HTTP
// transport knows the revision.
func cancelSender(cn *conn, modern string) func(id int64, reason string) {
	return func(id int64, reason string) {
		p := &cancelledParams{RequestID: jsontext.Value(strconv.AppendInt(nil, id, 10)), Reason: reason}
		if modern != "" {
			p.Meta = Meta{revision.MetaProtocolVersion: modern}
		}
		_ = cn.notify(context.Background(), notificationCancelled, p)
	}
}

// InitializeResult returns the server's answer to initialize (nil before Connect).
// It is the newest result after a re-initialization (ClientOptions). On a
// 2026-07-28 connection it is built from the DiscoverResult.
func (c *Client) InitializeResult() *InitializeResult { return c.init.Load() }

// ProtocolVersion returns the negotiated revision ("" before Connect).
func (c *Client) ProtocolVersion() string {
	if res := c.init.Load(); res != nil {
		return res.ProtocolVersion
	}
	return ""
}

// Call sends any request and decodes its result into result (may be nil).
// When ctx ends first, the client sends notifications/cancelled. If the
// server no longer knows the session, Call starts a new one and sends the
// request again, once (see ClientOptions.DisableReinitialize).
//
// On a 2026-07-28 connection params must encode as a JSON object (or be nil):
// Call adds the client's _meta keys (revision.MetaProtocolVersion,
// revision.MetaClientCapabilities, revision.MetaClientInfo, revision.MetaLogLevel) to its _meta,
// keeping those the caller set; removes resultType from the result; and
// answers an input_required result of tools/call, prompts/get or
// resources/read with the client's handlers (OnElicitation, OnSampling,
// Roots or OnListRoots), sending the request again with a new id,
// inputResponses and the server's requestState, at most
// ClientOptions.MaxInputRounds times. An input request the client has no
// handler for, or whose handler fails, ends the call with an error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if c.conn == nil {
		return errors.New("mcp: client not connected")
	}
	if c.mw.send != nil {
		return c.mw.sendThrough(ctx, method, params, result, false)
	}
	return callDirect(c, ctx, method, params, result)
}

// callDirect sends a request under the rules of the client's revision,
// innermost in the middleware chain.
func callDirect(c *Client, ctx context.Context, method string, params, result any) error {
	if c.mod.on {
		return c.mod.call(ctx, method, params, result)
	}
	return c.sess.call(ctx, method, params, result)
}

// Notify sends a notification; like Call, it starts a new session and
// sends again if the server no longer knows the session.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	if c.conn == nil {
		return errors.New("mcp: client not connected")
	}
	if c.mw.send != nil {
		return c.mw.sendThrough(ctx, method, params, nil, true)
	}
	return notifyDirect(c, ctx, method, params)
}

// notifyDirect sends a notification, innermost in the middleware chain.
func notifyDirect(c *Client, ctx context.Context, method string, params any) error {
	if c.mod.on {
		return c.conn.notify(ctx, method, params)
	}
	return c.sess.notify(ctx, method, params)
}

// ListTools fetches one page of tools ("" = the first page).
func (c *Client) ListTools(ctx context.Context, cursor string) (*ListToolsResult, error) {
	return fetchPage[ListToolsResult](ctx, c, methodToolsList, cursor)
}

// ListAllTools follows nextCursor until the last page.
func (c *Client) ListAllTools(ctx context.Context) ([]*Tool, error) {
	return listAll(ctx, func(ctx context.Context, cursor string) ([]*Tool, string, error) {
		res, err := c.ListTools(ctx, cursor)
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
}

// CallTool calls a tool with args (any JSON-encodable value, a
// json.RawMessage, or nil for none). A JSON-RPC error is returned as *Error;
// an isError result is returned together with a *StructuredError decoded from
// its text (code ErrToolFailed when the text is not one).
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallToolResult, error) {
	p := &CallToolParams{Name: name}
	var err error
	if p.Arguments, err = toolArguments(name, args); err != nil {
		return nil, err
	}
	return c.CallToolWithParams(ctx, p)
}

// CallToolWithParams is CallTool with full control of the params (_meta,
// task, raw arguments).
func (c *Client) CallToolWithParams(ctx context.Context, p *CallToolParams) (*CallToolResult, error) {
	var res CallToolResult
	if err := c.Call(ctx, methodToolsCall, p, &res); err != nil {
		return nil, err
	}
	if res.IsError {
		return &res, resultError(&res)
	}
	return &res, nil
}

func resultError(res *CallToolResult) *StructuredError {
	text := ""
	if len(res.Content) > 0 && res.Content[0].Type == ContentText {
		text = res.Content[0].Text
		var se StructuredError
		if jsonv2.Unmarshal([]byte(text), &se) == nil && se.Code != "" {
			return &se
		}
	}
	return &StructuredError{Code: ErrToolFailed, Message: text}
}

// DecodeStructured decodes a result's structuredContent into T.
func DecodeStructured[T any](res *CallToolResult) (T, error) {
	var v T
	if res == nil || res.StructuredContent == nil {
		return v, errors.New("mcp: result has no structuredContent")
	}
	err := jsonv2.Unmarshal(res.StructuredContent, &v)
	return v, err
}

// Close closes the transport and waits for the read goroutine to end.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	if c.kaStop != nil {
		c.kaStop()
		<-c.kaDone
	}
	c.conn.close()
	err := c.conn.t.Close()
	<-c.in.done
	return err
}

// toolArguments encodes the arguments of a call to tool name: args as
// JSON (already-encoded json.RawMessage or jsontext.Value as they are),
// or nil for none.
func toolArguments(name string, args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return a, nil
	case jsontext.Value:
		return json.RawMessage(a), nil
	}
	b, err := jsonv2.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("mcp: encoding arguments of %q: %w", name, err)
	}
	return b, nil
}
