package mcp

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/internal/logclip"
)

// A per-request session's log budget is looked up when a line is written,
// not for every request: a request that logs nothing keeps no budget, a
// line takes the peer's, and its lease ends with the request (also when
// a handler running on logs after it).
func TestPeerLogLooksUpTheBudgetOnWrite(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(logclip.NewHandler(slog.NewTextHandler(&buf, nil), 0, 100))
	peers := logclip.NewPeers(base)

	var quiet peerLog
	l := quiet.start(peers, "addr:192.0.2.1", base.Handler())
	l.Debug("below the level")
	quiet.release()
	assert.Equal(t, 0, peers.Len(), "nothing written: no budget looked up")
	assert.Empty(t, buf.String())

	var p peerLog
	l = p.start(peers, "addr:192.0.2.1", base.Handler())
	l.Info("one line")
	assert.Equal(t, 1, peers.Len(), "the line counts against the peer's budget")
	assert.Contains(t, buf.String(), "one line")
	l.With("k", "v").Info("scoped")
	assert.Contains(t, buf.String(), "k=v")
	p.release()

	var late peerLog
	l = late.start(peers, "addr:192.0.2.2", base.Handler())
	late.release()
	l.Info("after the request") // a handler that ran on: written, no lease kept
	assert.Contains(t, buf.String(), "after the request")
	late.mu.Lock()
	assert.Equal(t, logclip.Lease{}, late.lease)
	late.mu.Unlock()
}
