package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
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
	// ProtocolVersion is the revision requested (default LatestVersion).
	// A modern revision (Version20260728) makes the client stateless
	// (client_modern.go): Connect calls server/discover instead of
	// initialize, and every request carries the revision, Capabilities
	// and clientInfo in params._meta.
	ProtocolVersion string
	// LogLevel, at a modern revision, asks the server for
	// notifications/message at this level and above on every request
	// (_meta MetaLogLevel; "" = no log messages). It replaces
	// SetLoggingLevel, which modern servers no longer offer; a request's
	// own _meta may set another level.
	LogLevel LoggingLevel
	// MaxInputRounds bounds how many times a modern request answered with
	// input_required is sent again with the answers (0 =
	// DefaultMaxInputRounds).
	MaxInputRounds int
	// Capabilities are declared to the server.
	Capabilities ClientCapabilities
	// Logger receives diagnostics (nil = slog.Default()).
	Logger *slog.Logger
	// MaxDepth bounds the nesting depth of incoming messages (default 64).
	MaxDepth int
	// OnNotification, if set, receives every notification from the server.
	// It runs on the client's read goroutine: return quickly.
	OnNotification func(method string, params jsontext.Value)
	// OnResourceUpdated receives the uri of each
	// notifications/resources/updated, OnListChanged the method of each
	// notifications/{tools,resources,prompts}/list_changed
	// (client_features.go), before OnNotification sees them. They run on
	// the client's read goroutine: return quickly.
	OnResourceUpdated func(uri string)
	OnListChanged     func(method string)

	// Handlers of the server's requests (client_handlers.go). Each runs on
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
	// OnTaskStatus receives notifications/tasks/status (client_tasks.go),
	// before OnNotification sees it. It runs on the client's read
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
}

// Client is an MCP client: it connects to a server over any Transport,
// performs the initialize handshake and calls the server. It is what
// downstream tests use against a server over transport.NewPipe.
type Client struct {
	opts ClientOptions
	log  *slog.Logger

	conn     *conn
	init     atomic.Pointer[InitializeResult]
	reinitMu sync.Mutex // one re-initialization at a time
	readDone chan struct{}
	closeMu  sync.Mutex
	readErr  error
	side     clientSide  // server-to-client requests (client_handlers.go)
	mod      modernState // revision 2026-07-28 (client_modern.go)
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
		o.ProtocolVersion = LatestVersion
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = jsonrpc.DefaultMaxDepth
	}
	if o.MaxInputRounds <= 0 {
		o.MaxInputRounds = DefaultMaxInputRounds
	}
	declareHandlerCapabilities(&o)
	c := &Client{opts: o, log: o.Logger}
	c.side.reqs.log = o.Logger
	c.setupModern()
	return c
}

// Connect starts reading from t, sends initialize and, once the server has
// answered with a revision this client supports, notifications/initialized.
// At a modern revision (ClientOptions.ProtocolVersion) it sends
// server/discover instead and fails unless the server lists the revision
// among its supportedVersions; a -32022 answer is returned as *Error.
// On failure the transport is closed. Close ends the connection.
func (c *Client) Connect(ctx context.Context, t transport.Transport) error {
	if c.conn != nil {
		return errors.New("mcp: client already connected")
	}
	c.conn = newConn(t, c.opts.MaxDepth, c.log)
	c.readDone = make(chan struct{})
	go c.readLoop()
	if c.mod.on {
		if err := c.discover(ctx); err != nil {
			c.Close()
			return err
		}
		return nil
	}
	res, err := c.handshake(ctx)
	if err != nil {
		c.Close()
		return err
	}
	c.init.Store(res)
	return nil
}

// handshake sends initialize and, once the server has answered with a
// revision this client supports, notifications/initialized.
func (c *Client) handshake(ctx context.Context) (*InitializeResult, error) {
	var res InitializeResult
	err := c.conn.call(ctx, MethodInitialize, &InitializeParams{
		ProtocolVersion: c.opts.ProtocolVersion,
		Capabilities:    c.opts.Capabilities,
		ClientInfo:      Implementation{Name: c.opts.Name, Version: c.opts.Version, Title: c.opts.Title},
	}, &res, nil)
	if err == nil && !IsSupportedVersion(res.ProtocolVersion) {
		err = fmt.Errorf("mcp: server chose unsupported protocol revision %q", res.ProtocolVersion)
	}
	if err == nil {
		err = c.conn.notify(ctx, NotificationInitialized, nil)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// inSession runs send; if it fails because the server no longer knows the
// session, it starts a new session (see renewed) and runs send once more.
func (c *Client) inSession(ctx context.Context, send func() error) error {
	old := c.init.Load()
	err := send()
	if again, err := c.renewed(ctx, old, err); !again {
		return err
	}
	return send()
}

// renewed handles err, the failure of a message sent within the session
// whose initialize result was old: when the server no longer knows that
// session, it starts a new one (unless another call did already) and
// reports true, meaning "send the message again". A failed handshake is
// returned, joined to err.
func (c *Client) renewed(ctx context.Context, old *InitializeResult, err error) (bool, error) {
	if err == nil || old == nil || c.mod.on || c.opts.DisableReinitialize || !errors.Is(err, transport.ErrSessionNotFound) {
		return false, err
	}
	c.reinitMu.Lock()
	defer c.reinitMu.Unlock()
	if c.init.Load() != old { // another call started the new session
		return true, nil
	}
	c.log.Info("mcp: the server ended the session; initializing a new one", "error", err)
	res, herr := c.handshake(ctx)
	if herr != nil {
		return false, fmt.Errorf("mcp: the server ended the session and a new one could not start: %w", errors.Join(err, herr))
	}
	c.init.Store(res)
	if c.opts.OnReinitialized != nil {
		c.opts.OnReinitialized(ctx, res)
	}
	return true, nil
}

func (c *Client) readLoop() {
	defer close(c.readDone)
	defer c.conn.close()
	for {
		msg, err := c.conn.t.Read(context.Background())
		if err != nil {
			var tooLarge *transport.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				c.log.Warn("mcp: client dropped an oversized message", "error", err)
				continue
			}
			if !isEOF(err) {
				c.closeMu.Lock()
				c.readErr = err
				c.closeMu.Unlock()
			}
			return
		}
		if jsonrpc.IsBatch(msg) {
			elems, derr := jsonrpc.SplitBatch(msg)
			if derr != nil {
				c.log.Warn("mcp: client received a malformed batch", "error", derr)
				continue
			}
			for _, e := range elems {
				c.handle(e)
			}
			continue
		}
		c.handle(msg)
	}
}

func (c *Client) handle(raw []byte) {
	m, derr := jsonrpc.Decode(raw, c.opts.MaxDepth)
	if derr != nil {
		c.log.Warn("mcp: client received a malformed message", "error", derr)
		if derr.ID != nil && string(derr.ID) != "null" {
			_ = c.conn.writeError(context.Background(), derr.ID, &Error{Code: derr.Code, Message: derr.Message})
		}
		return
	}
	switch m.Kind {
	case jsonrpc.KindResponse:
		if m.ID != nil {
			c.conn.deliver(&m)
		}
	case jsonrpc.KindNotification:
		c.listenNotification(&m)  // subscriptions/listen acknowledgements (client_modern_listen.go)
		c.featureNotification(&m) // resources and list_changed (client_features.go)
		c.handleNotification(&m)
	case jsonrpc.KindRequest:
		ctx := context.Background()
		if m.Method == MethodPing {
			_ = c.conn.writeResult(ctx, m.ID, EmptyResult{})
			return
		}
		if c.serveRequest(&m) {
			return
		}
		_ = c.conn.writeError(ctx, m.ID, &Error{Code: CodeMethodNotFound, Message: "Method not found: " + quote(m.Method)})
	}
}

// InitializeResult returns the server's answer to initialize (nil before Connect).
// It is the newest result after a re-initialization (ClientOptions). On a
// modern connection it is built from the DiscoverResult.
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
// On a modern connection params must encode as a JSON object (or be nil):
// Call adds the client's _meta keys (MetaProtocolVersion,
// MetaClientCapabilities, MetaClientInfo, MetaLogLevel) to its _meta,
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
	if c.mod.on {
		return c.modernCall(ctx, method, params, result)
	}
	return c.inSession(ctx, func() error { return c.conn.call(ctx, method, params, result, c.sendCancelled) })
}

func (c *Client) sendCancelled(id int64, reason string) {
	raw := jsontext.Value(fmt.Appendf(nil, "%d", id))
	p := &CancelledParams{RequestID: raw, Reason: reason}
	if c.mod.on { // names its revision, so that an HTTP transport knows it is modern
		p.Meta = Meta{MetaProtocolVersion: c.opts.ProtocolVersion}
	}
	_ = c.conn.notify(context.Background(), NotificationCancelled, p)
}

// Notify sends a notification; like Call, it starts a new session and
// sends again if the server no longer knows the session.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	if c.conn == nil {
		return errors.New("mcp: client not connected")
	}
	return c.inSession(ctx, func() error { return c.conn.notify(ctx, method, params) })
}

// Ping sends ping and waits for the answer. A modern client has no ping:
// the error wraps ErrMethodRemoved.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.removed(MethodPing, ""); err != nil {
		return err
	}
	return c.Call(ctx, MethodPing, nil, nil)
}

// ListTools fetches one page of tools ("" = the first page).
func (c *Client) ListTools(ctx context.Context, cursor string) (*ListToolsResult, error) {
	return fetchPage[ListToolsResult](ctx, c, MethodToolsList, cursor)
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
// jsontext.Value, or nil for none). A JSON-RPC error is returned as *Error;
// an isError result is returned together with a *StructuredError decoded from
// its text (code ErrToolFailed when the text is not one).
func (c *Client) CallTool(ctx context.Context, name string, args any) (*CallToolResult, error) {
	p := &CallToolParams{Name: name}
	switch a := args.(type) {
	case nil:
	case jsontext.Value:
		p.Arguments = a
	default:
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("mcp: encoding arguments of %q: %w", name, err)
		}
		p.Arguments = b
	}
	return c.CallToolWithParams(ctx, p)
}

// CallToolWithParams is CallTool with full control of the params (_meta,
// task, raw arguments).
func (c *Client) CallToolWithParams(ctx context.Context, p *CallToolParams) (*CallToolResult, error) {
	var res CallToolResult
	if err := c.Call(ctx, MethodToolsCall, p, &res); err != nil {
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
		if json.Unmarshal([]byte(text), &se) == nil && se.Code != "" {
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
	err := json.Unmarshal(res.StructuredContent, &v)
	return v, err
}

// Close closes the transport and waits for the read goroutine to end.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	c.conn.close()
	err := c.conn.t.Close()
	<-c.readDone
	return err
}
