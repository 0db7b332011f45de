//go:build !keel_omit2025

package mcp_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
)

// logLog collects the log messages a client receives.
type logLog struct {
	mu   sync.Mutex
	seen []mcp.LoggingMessageNotificationParams
}

func (l *logLog) add(p *mcp.LoggingMessageNotificationParams) {
	l.mu.Lock()
	l.seen = append(l.seen, *p)
	l.mu.Unlock()
}

func (l *logLog) take() []mcp.LoggingMessageNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen
	l.seen = nil
	return s
}

var allLevels = []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice, mcp.LoggingLevelWarning,
	mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency}

// After logging/setLevel L the client receives exactly the messages of L
// and more severe, for each of the eight levels; before it, those of
// ServerOptions.LogLevel (here notice) and more severe.
func TestLogLevelFiltering(t *testing.T) {
	opts := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolLog))
	opts.Logging, opts.LogLevel = true, mcp.LoggingLevelNotice
	var log logLog
	copts := *quietClient
	copts.OnLog = log.add
	c, _ := connectRecorded(t, opts, &copts)
	require.NotNil(t, c.InitializeResult().Capabilities.Logging)
	ctx := context.Background()

	levelsSent := func() []mcp.LoggingLevel {
		t.Helper()
		_, err := c.CallTool(ctx, mcptest.ToolLog, map[string]any{"levels": allLevels})
		require.NoError(t, err)
		var got []mcp.LoggingLevel
		for _, m := range log.take() {
			assert.Equal(t, "log", m.Logger)
			assert.Equal(t, "message at "+string(m.Level), m.Data)
			got = append(got, m.Level)
		}
		return got
	}
	assert.Equal(t, allLevels[2:], levelsSent(), "the server's default level")
	for i, l := range allLevels {
		require.NoError(t, c.SetLoggingLevel(ctx, l))
		assert.Equal(t, allLevels[i:], levelsSent(), "level %s", l)
	}

	err := c.SetLoggingLevel(ctx, "verbose")
	require.ErrorIs(t, err, &mcp.Error{Code: mcp.CodeInvalidParams})
	assert.Equal(t, allLevels[7:], levelsSent(), "an invalid level changes nothing")
}

func TestLoggingDisabled(t *testing.T) {
	var log logLog
	copts := *quietClient
	copts.OnLog = log.add
	c, rec := connectRecorded(t, mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolLog)), &copts)
	assert.Nil(t, c.InitializeResult().Capabilities.Logging)
	ctx := context.Background()
	require.ErrorIs(t, c.SetLoggingLevel(ctx, mcp.LoggingLevelDebug), &mcp.Error{Code: mcp.CodeMethodNotFound})
	_, err := c.CallTool(ctx, mcptest.ToolLog, map[string]any{"levels": allLevels, "slog": true})
	require.NoError(t, err)
	assert.Empty(t, log.take())
	assert.Empty(t, rec.seen())
	assert.False(t, mcp.ClientLogger(ctx).Enabled(ctx, slog.LevelError), "outside a session: discards")
}

type secret string

func (secret) LogValue() slog.Value { return slog.StringValue("***") }

// The slog handler's data: "message" and the attributes, groups as nested
// objects, values JSON-encoded; the object stays valid for strict readers.
func TestClientLogHandlerData(t *testing.T) {
	when := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	logErrs := make(chan error, 1)
	opts := mcptest.ServerOptions(handlerTools{"work": func(ctx context.Context, _ *mcp.ToolCall) (*mcp.CallToolResult, error) {
		ss := mcp.SessionFromContext(ctx)
		h := mcp.LogHandlerForTest(ss, "db")
		log := slog.New(h)
		log.Info("dup", "a", 1, "a", 2, "message", "attr named message")
		log.Warn("kinds", "err", errors.New("broken"), "nan", math.NaN(), "d", 1500*time.Millisecond, "t", when,
			"u", uint64(7), "s", secret("pw"), "bad", "\xff", "ch", make(chan int), "m", map[string]int{"x": 1},
			slog.Group("empty"), slog.Group("", slog.Int("inlined", 1)), "", "no key")
		log.WithGroup("outer").With("k", "v").WithGroup("inner").Error("groups", "leaf", true)
		log.WithGroup("unused").Error("no attrs")
		log.Debug("below the level")
		logErrs <- ss.Log(ctx, "verbose", "x", "y")
		return mcp.TextResult("done"), nil
	}})
	opts.Logging = true
	var log logLog
	copts := *quietClient
	copts.OnLog = log.add
	c, _ := connectRecorded(t, opts, &copts)
	_, err := c.CallTool(context.Background(), "work", nil)
	require.NoError(t, err)
	require.Error(t, <-logErrs, "an invalid level")

	got := log.take()
	require.Len(t, got, 4)
	want := []struct {
		level mcp.LoggingLevel
		data  string
	}{
		{mcp.LoggingLevelInfo, `{"message":"dup","a":1,"a#2":2,"message#2":"attr named message"}`},
		{mcp.LoggingLevelWarning, `{"message":"kinds","err":"broken","nan":"NaN","d":"1.5s","t":"2025-01-02T03:04:05Z","u":7,"s":"***",
			"bad":"\ufffd","ch":"CH","m":{"x":1},"inlined":1}`},
		{mcp.LoggingLevelError, `{"message":"groups","outer":{"k":"v","inner":{"leaf":true}}}`},
		{mcp.LoggingLevelError, `{"message":"no attrs"}`},
	}
	for i, w := range want {
		assert.Equal(t, w.level, got[i].Level)
		assert.Equal(t, "db", got[i].Logger)
		b, err := json.Marshal(got[i].Data)
		require.NoError(t, err)
		if i == 1 { // a channel is written as its fmt form, which varies
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			assert.Contains(t, m["ch"], "0x")
			m["ch"] = "CH"
			b, err = json.Marshal(m)
			require.NoError(t, err)
		}
		assert.JSONEq(t, w.data, string(b), "record %d", i)
	}
}
