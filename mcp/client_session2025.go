package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// clientSession is a Client's session with its server: the server's answer
// to initialize (or, on a modern connection, the one built from
// server/discover) and, at a legacy revision, the handshake that opens the
// session, the calls made within it and the new session the client starts
// when the server no longer knows the old one.
type clientSession struct {
	opts *ClientOptions // the Client's, read-only
	log  *slog.Logger

	init atomic.Pointer[InitializeResult]
	mu   sync.Mutex // one re-initialization at a time

	cn     *conn                         // set by connect
	cancel func(id int64, reason string) // notifications/cancelled (cancelSender)
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
// reports true, meaning "send the message again". A modern connection has
// no session to renew. A failed handshake is returned, joined to err.
func (s *clientSession) renewed(ctx context.Context, old *InitializeResult, err error) (bool, error) {
	if err == nil || old == nil || revision.ServedPerRequest(s.opts.ProtocolVersion) || s.opts.DisableReinitialize || !errors.Is(err, transport.ErrSessionNotFound) {
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
