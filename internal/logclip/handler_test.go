package logclip_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/internal/logclip"
)

func TestClip(t *testing.T) {
	assert.Equal(t, "short", logclip.Clip("short", 64))
	assert.Equal(t, strings.Repeat("x", 8)+"...(20 bytes)", logclip.Clip(strings.Repeat("x", 20), 8))
	assert.Equal(t, "a...(7 bytes)", logclip.Clip("aéééé"[:7], 2), "cut at a rune boundary")
	assert.Equal(t, strings.Repeat("n", 64)+"...(100 bytes)", logclip.Attr("k", strings.Repeat("n", 100)).Value.String())
}

// Every string value of a line is clipped: the message, attributes (in
// groups, added with WithAttrs), error texts and bytes; short lines pass
// unchanged.
func TestHandlerClipsEveryValue(t *testing.T) {
	var buf exampletest.SafeBuffer
	h := logclip.NewHandler(slog.NewJSONHandler(&buf, nil), 16, -1)
	long := strings.Repeat("\n", 1000)
	log := slog.New(h).With("client", long)
	log.Info(long, "s", long, "err", errors.New(long), "b", []byte(long),
		slog.Group("g", "inner", long), slog.Int("n", 3))
	out := buf.String()
	assert.Less(t, len(out), 1000, out)
	assert.Equal(t, 6, strings.Count(out, "(1000 bytes)"), out)
	assert.Contains(t, out, `"n":3`)

	buf = exampletest.SafeBuffer{}
	slog.New(logclip.NewHandler(slog.NewTextHandler(&buf, nil), 16, -1)).Info("short", "k", "v")
	assert.Contains(t, buf.String(), `msg=short k=v`)
}

// The lines of one scope are rate-limited at every level; the ones
// suppressed are reported once, a second later. Another scope has a
// limit of its own.
func TestHandlerRateLimitsEachScope(t *testing.T) {
	var buf exampletest.SafeBuffer
	base := slog.New(logclip.NewHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), 0, 5))
	peer := logclip.Scope(base).With("peer", "a")
	start := time.Now()
	for range 100 {
		peer.Debug("noisy")
		peer.Error("noisy")
	}
	// A burst of 5, and 5 a second while the loop ran.
	written := strings.Count(buf.String(), "msg=noisy")
	assert.GreaterOrEqual(t, written, 5)
	assert.LessOrEqual(t, written, 5+int(5*time.Since(start).Seconds()))
	base.Info("other scope")
	assert.Contains(t, buf.String(), "other scope", "another scope is not starved")
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "suppressed="+strconv.Itoa(200-written)) }, 3*time.Second, 10*time.Millisecond)
	assert.Equal(t, written, strings.Count(buf.String(), "msg=noisy"))
	assert.True(t, base.Handler().Enabled(context.Background(), slog.LevelDebug))
}

// The scopes of one peer share one budget: a peer that opens many
// sessions writes no more lines than one session would, while another
// peer keeps a budget of its own.
func TestPeersShareOneBudget(t *testing.T) {
	var buf exampletest.SafeBuffer
	base := slog.New(logclip.NewHandler(slog.NewTextHandler(&buf, nil), 0, 5))
	peers := logclip.NewPeers(base)
	start := time.Now()
	for i := range 50 {
		l, release := peers.Scope("addr:127.0.0.2", slog.Int("session", i))
		defer release.Release()
		l.Error("greedy")
		l.Error("greedy")
	}
	written := strings.Count(buf.String(), "msg=greedy")
	assert.GreaterOrEqual(t, written, 5)
	assert.LessOrEqual(t, written, 5+int(5*time.Since(start).Seconds())+1, "50 sessions of one peer share one budget")
	other, releaseOther := peers.Scope("addr:127.0.0.3", slog.String("session", "polite-1"))
	defer releaseOther.Release()
	other.Info("polite")
	assert.Contains(t, buf.String(), "polite", "another peer is not starved")
	assert.Contains(t, buf.String(), "session=polite-1", "a scope keeps its own attributes")
	assert.Contains(t, buf.String(), "session=0\n", "the first greedy lines carry their session")
	own, release := peers.Scope("")
	own.Info("no peer")
	release.Release()
	assert.Contains(t, buf.String(), "no peer")
}

// A peer that opens and ends its scopes one after another (a session,
// then the next) keeps one budget: it outlives the peer's last scope.
func TestPeersBudgetOutlivesScopes(t *testing.T) {
	var buf exampletest.SafeBuffer
	peers := logclip.NewPeers(slog.New(logclip.NewHandler(slog.NewTextHandler(&buf, nil), 0, 10)))
	start := time.Now()
	for range 1000 {
		l, release := peers.Scope("addr:127.0.0.2")
		l.Info("churn")
		release.Release()
	}
	written := strings.Count(buf.String(), "msg=churn")
	assert.LessOrEqual(t, written, 10+int(10*time.Since(start).Seconds())+1, "1000 short scopes of one peer: one budget")
	assert.Equal(t, 1, peers.Len())
}

// Many peers together write at most GlobalFactor peers' worth of lines,
// and the budgets kept are bounded (MaxPeers): peers past it share one.
func TestPeersGlobalBudget(t *testing.T) {
	var buf exampletest.SafeBuffer
	peers := logclip.NewPeers(slog.New(logclip.NewHandler(slog.NewTextHandler(&buf, nil), 0, 5)))
	start := time.Now()
	for i := range logclip.MaxPeers + 100 {
		l, release := peers.Scope(fmt.Sprintf("addr:2001:db8:%x::/64", i))
		defer release.Release()
		l.Info("crowd")
	}
	written := strings.Count(buf.String(), "msg=crowd")
	global := 5 * logclip.GlobalFactor
	assert.GreaterOrEqual(t, written, global)
	assert.LessOrEqual(t, written, global+int(float64(global)*time.Since(start).Seconds())+1, "every peer together")
	assert.Equal(t, logclip.MaxPeers, peers.Len(), "budgets kept are bounded")
}
