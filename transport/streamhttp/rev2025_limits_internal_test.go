//go:build !keel_omit2025

package streamhttp

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/transport"
)

// Every bound of a session is finite by default; a negative value turns
// it off.
func TestSessionOptionsBoundedByDefault(t *testing.T) {
	serve := func(context.Context, transport.Transport) error { return nil }
	h := NewHandler(&Options{Serve: serve})
	assert.Equal(t, DefaultMaxSessions, h.opts.MaxSessions)
	assert.Equal(t, DefaultMaxSessionsPerPeer, h.opts.MaxSessionsPerPeer)
	assert.Equal(t, DefaultInitTimeout, h.opts.InitTimeout)
	assert.Equal(t, DefaultIdleTimeout, h.opts.IdleTimeout)
	assert.Equal(t, DefaultMaxSessionGETStreams, h.opts.MaxSessionGETStreams)
	assert.LessOrEqual(t, DefaultInitTimeout, 10*time.Second)

	off := NewHandler(&Options{Serve: serve, MaxSessions: -1, MaxSessionGETStreams: -1, InitTimeout: -1})
	assert.Negative(t, off.opts.MaxSessions)
	assert.Negative(t, off.opts.MaxSessionGETStreams)
	assert.Negative(t, off.opts.InitTimeout)
}
