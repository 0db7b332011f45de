//go:build !keel_omit2025

package mcp

import (
	"context"
	"errors"
	"fmt"
)

// The lifecycle of a 2025 session: STARTING → INITIALIZING (initialize
// answered) → RUNNING (notifications/initialized received) → CLOSED
// (terminal). Requests other than initialize and ping are served in
// RUNNING only (rev2025_engine.go), and only a RUNNING session is sent
// notifications and requests outside a request.
const (
	stateInitializing sessionState = 1
	stateRunning      sessionState = 2
)

// sessionHandshake is what a 2025 session's initialize negotiated
// (guarded by the session's mu).
type sessionHandshake struct {
	version    string
	clientInfo Implementation
	clientCaps ClientCapabilities
}

func (h *sessionHandshake) revision() string         { return h.version }
func (h *sessionHandshake) info() Implementation     { return h.clientInfo }
func (h *sessionHandshake) caps() ClientCapabilities { return h.clientCaps }

// String returns the state's name as the lifecycle names it (e.g. "RUNNING").
func (s sessionState) String() string {
	switch s {
	case stateStarting:
		return "STARTING"
	case stateInitializing:
		return "INITIALIZING"
	case stateRunning:
		return "RUNNING"
	case stateClosed:
		return "CLOSED"
	}
	return "UNKNOWN"
}

// currentState returns the session's lifecycle state.
func (ss *Session) currentState() sessionState { return sessionState(ss.state.Load()) }

// notifySessions is NotifyAll for this process's initialized 2025
// sessions: it returns the errors of those it could not reach, joined (a
// closed session is skipped silently).
func (s *Server) notifySessions(ctx context.Context, method string, params any) error {
	var errs []error
	for _, ss := range s.Sessions() {
		if ss.currentState() != stateRunning {
			continue
		}
		if err := ss.Notify(ctx, method, params); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, fmt.Errorf("session %s: %w", ss.ConnectionCorrelationID(), err))
		}
	}
	return errors.Join(errs...)
}
