//go:build !keel_omit2025

package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// The Client's 2025 session: the initialize handshake that opens it, the
// calls made within it, the new session the client starts when the server
// no longer knows the old one, the keep-alive pings, and the methods the
// 2025 revisions have and 2026-07-28 removed (ping, logging/setLevel,
// resources/subscribe and unsubscribe, notifications/roots/list_changed).
// Left out by the build tag keel_omit2025 (rev2025_omitted_client.go).

// clientDefaultVersion is the revision a Client asks for when
// ClientOptions.ProtocolVersion is empty.
const clientDefaultVersion = latestVersion

// clientVersionRefused: this build's Client speaks every revision.
func clientVersionRefused(string) error { return nil }

// clientSession is a Client's 2025 session with its server.
type clientSession struct {
	opts *ClientOptions // the Client's, read-only
	log  *slog.Logger
	init *atomic.Pointer[InitializeResult] // the Client's: the newest initialize result
	mu   sync.Mutex                        // one re-initialization at a time

	cn     *conn                         // set by connect
	cancel func(id int64, reason string) // notifications/cancelled (cancelSender)
}

// setup gives the session the Client's options, logger and the place
// where the initialize result is kept.
func (s *clientSession) setup(o *ClientOptions, log *slog.Logger, init *atomic.Pointer[InitializeResult]) {
	s.opts, s.log, s.init = o, log, init
}

// connect makes the session's calls go over cn.
func (s *clientSession) connect(cn *conn) {
	s.cn, s.cancel = cn, cancelSender(cn, "")
}

// handshake sends initialize and, once the server has answered with a
// revision this client supports, notifications/initialized.
func (s *clientSession) handshake(ctx context.Context) (*InitializeResult, error) {
	var res InitializeResult
	o := s.opts
	err := s.cn.call(ctx, methodInitialize, &initializeParams{
		ProtocolVersion: o.ProtocolVersion,
		Capabilities:    o.Capabilities,
		ClientInfo:      Implementation{Name: o.Name, Version: o.Version, Title: o.Title},
	}, &res, nil)
	if err == nil && !revision.Negotiated(res.ProtocolVersion) {
		err = fmt.Errorf("mcp: server chose unsupported protocol revision %q", res.ProtocolVersion)
	}
	if err == nil {
		err = s.cn.notify(ctx, notificationInitialized, nil)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// call sends a request within the session and decodes its result into
// result (may be nil); when ctx ends first, it sends notifications/cancelled.
func (s *clientSession) call(ctx context.Context, method string, params, result any) error {
	return s.inSession(ctx, func() error { return s.cn.call(ctx, method, params, result, s.cancel) })
}

// notify sends a notification within the session.
func (s *clientSession) notify(ctx context.Context, method string, params any) error {
	return s.inSession(ctx, func() error { return s.cn.notify(ctx, method, params) })
}

// inSession runs send; if it fails because the server no longer knows the
// session, it starts a new session (see renewed) and runs send once more.
func (s *clientSession) inSession(ctx context.Context, send func() error) error {
	old := s.init.Load()
	err := send()
	if again, err := s.renewed(ctx, old, err); !again {
		return err
	}
	return send()
}

// renewed handles err, the failure of a message sent within the session
// whose initialize result was old: when the server no longer knows that
// session, it starts a new one (unless another call did already) and
// reports true, meaning "send the message again". A failed handshake is
// returned, joined to err.
func (s *clientSession) renewed(ctx context.Context, old *InitializeResult, err error) (bool, error) {
	if err == nil || old == nil || s.opts.DisableReinitialize || !errors.Is(err, transport.ErrSessionNotFound) {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.init.Load() != old { // another call started the new session
		return true, nil
	}
	s.log.Info("mcp: the server ended the session; initializing a new one", "error", err)
	res, herr := s.handshake(ctx)
	if herr != nil {
		return false, fmt.Errorf("mcp: the server ended the session and a new one could not start: %w", errors.Join(err, herr))
	}
	s.init.Store(res)
	if s.opts.OnReinitialized != nil {
		s.opts.OnReinitialized(ctx, res)
	}
	return true, nil
}

// startKeepAlive starts the pinger of ClientOptions.KeepAlive, if set,
// once the handshake is done.
func startKeepAlive(c *Client) {
	d := c.opts.KeepAlive
	if d <= 0 {
		return
	}
	kctx, stop := context.WithCancel(context.Background())
	c.kaStop, c.kaDone = stop, make(chan struct{})
	go func() {
		defer close(c.kaDone)
		keepAlive(kctx, d, func() bool { return true }, c.Ping, func(err error) {
			c.log.Warn("mcp: closing the connection: the server does not answer pings", "keepAlive", d)
			c.kaErr.Store(&err)
			c.conn.t.Close()
		})
	}()
}

// answerPing answers the server's ping, reporting whether m was one.
func (r *clientReader) answerPing(m *jsonrpc.Message) bool {
	if m.Method != methodPing {
		return false
	}
	_ = r.cn.writeResult(context.Background(), m.ID, emptyResult{})
	return true
}

// rootsChangedMethod is what SetRoots sends: the CapabilityError of a
// client that did not declare roots names it.
const rootsChangedMethod = notificationRootsListChanged

// notifyRootsChanged sends notifications/roots/list_changed after SetRoots
// on a connected 2025 session whose client declared roots with
// listChanged.
func notifyRootsChanged(ctx context.Context, c *Client) error {
	rc := c.opts.Capabilities.Roots
	if c.conn == nil || c.init.Load() == nil || rc == nil || !rc.ListChanged || c.mod.on {
		return nil
	}
	return c.Notify(ctx, notificationRootsListChanged, nil)
}

// Ping sends ping and waits for the answer. Revision 2026-07-28 has no
// ping: a client of that revision sends nothing, and the error wraps
// ErrMethodRemoved.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.mod.removed(methodPing, ""); err != nil {
		return err
	}
	return c.Call(ctx, methodPing, nil, nil)
}

// SetLoggingLevel asks the server to send log messages of level and more
// severe (logging/setLevel); they arrive at ClientOptions.OnLog. A
// 2026-07-28 client sends its level with each request instead
// (ClientOptions.LogLevel): the error wraps ErrMethodRemoved.
func (c *Client) SetLoggingLevel(ctx context.Context, level LoggingLevel) error {
	if err := c.mod.removed(methodLoggingSetLevel, hintSetLevel); err != nil {
		return err
	}
	return c.Call(ctx, methodLoggingSetLevel, &setLevelParams{Level: level}, nil)
}

// Subscribe asks for notifications/resources/updated about uri (see
// ClientOptions.OnResourceUpdated). The server must declare
// resources.subscribe; otherwise the error is -32601. A 2026-07-28 client
// subscribes with Listen instead: the error wraps ErrMethodRemoved.
func (c *Client) Subscribe(ctx context.Context, uri string) error {
	if err := c.mod.removed(methodResourcesSubscribe, hintSubscribe); err != nil {
		return err
	}
	return c.Call(ctx, methodResourcesSubscribe, &subscribeParams{URI: uri}, nil)
}

// Unsubscribe ends a subscription made with Subscribe. A 2026-07-28
// client ends its Subscription instead: the error wraps ErrMethodRemoved.
func (c *Client) Unsubscribe(ctx context.Context, uri string) error {
	if err := c.mod.removed(methodResourcesUnsubscribe, hintUnsubscribe); err != nil {
		return err
	}
	return c.Call(ctx, methodResourcesUnsubscribe, &unsubscribeParams{URI: uri}, nil)
}
