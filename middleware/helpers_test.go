package middleware

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

type echoIn struct {
	Message string `json:"message"`
}

// testTools is a registry with a few tools for the tests:
//
//	echo      returns its message
//	panic     panics
//	block     signals started, then waits for release (ignoring its context)
//	cooperate waits for its context to end and returns its error
//	serial    like block, registered Serial
//	nilres    returns (nil, nil)
type testTools struct {
	reg     *registry.Registry
	started chan context.Context // block, serial and cooperate send their context here
	release chan struct{}        // block and serial wait on it
}

func newTestTools(t testing.TB) *testTools {
	tt := &testTools{reg: registry.New(nil), started: make(chan context.Context, 100), release: make(chan struct{})}
	raw := func(name string, h registry.ToolHandler, opts *registry.ToolOptions) {
		require.NoError(t, tt.reg.AddTool(&mcp.Tool{Name: name, InputSchema: jsontext.Value(`{"type":"object"}`)}, h, opts))
	}
	registry.MustRegister(tt.reg, "echo", "Echoes.", func(_ context.Context, in echoIn) (string, error) { return in.Message, nil }, nil)
	raw("panic", func(context.Context, *mcp.ToolCall, jsontext.Value) (*mcp.CallToolResult, error) {
		panic("boom")
	}, nil)
	blocking := func(ctx context.Context, _ *mcp.ToolCall, _ jsontext.Value) (*mcp.CallToolResult, error) {
		tt.started <- ctx
		<-tt.release
		return mcp.TextResult("done"), nil
	}
	raw("block", blocking, nil)
	raw("serial", blocking, &registry.ToolOptions{Serial: true})
	raw("cooperate", func(ctx context.Context, _ *mcp.ToolCall, _ jsontext.Value) (*mcp.CallToolResult, error) {
		tt.started <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	}, nil)
	raw("nilres", func(context.Context, *mcp.ToolCall, jsontext.Value) (*mcp.CallToolResult, error) { return nil, nil }, nil)
	return tt
}

// call returns a ToolCall with fixed ids and, if logs is not nil, a logger
// writing to it.
func call(name, args string, logs *syncBuffer) *mcp.ToolCall {
	tc := &mcp.ToolCall{Name: name, Arguments: jsontext.Value(args), CorrelationID: "corr-1", RunID: "run-1"}
	if logs != nil {
		tc.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		tc.Logger = slog.New(slog.DiscardHandler)
	}
	return tc
}

// early captures what RespondEarly sends.
type early struct {
	ch chan earlyResponse
}

type earlyResponse struct {
	res *mcp.CallToolResult
	err error
	at  time.Time
}

func withResponder(tc *mcp.ToolCall) *early {
	e := &early{ch: make(chan earlyResponse, 1)}
	tc.SetResponder(func(res *mcp.CallToolResult, err error) bool {
		e.ch <- earlyResponse{res, err, time.Now()}
		return true
	})
	return e
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (log output).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// recorder records the order in which stages run.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *recorder) stage(name string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (*mcp.CallToolResult, error) {
			r.add(name + ">")
			defer r.add("<" + name)
			return next(ctx, c)
		}
	}
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, " ")
}

// structuredErr extracts the StructuredError from err.
func structuredErr(t testing.TB, err error) *mcp.StructuredError {
	t.Helper()
	var se *mcp.StructuredError
	require.True(t, errors.As(err, &se), "want a StructuredError, got %v", err)
	return se
}

// memSink records audit events.
type memSink struct {
	mu       sync.Mutex
	enters   []ToolEnterEvent
	exits    []ToolExitEvent
	enterErr error
	exitErr  error
}

func (s *memSink) Enter(_ context.Context, ev ToolEnterEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enters = append(s.enters, ev)
	return s.enterErr
}

func (s *memSink) Exit(_ context.Context, ev ToolExitEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exits = append(s.exits, ev)
	return s.exitErr
}

func (s *memSink) events() ([]ToolEnterEvent, []ToolExitEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ToolEnterEvent(nil), s.enters...), append([]ToolExitEvent(nil), s.exits...)
}

// fakeClock advances by step on every reading.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func newFakeClock(step time.Duration) *fakeClock {
	return &fakeClock{t: time.Date(2025, 11, 25, 12, 0, 0, 0, time.UTC), step: step}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.t
	f.t = f.t.Add(f.step)
	return t
}

// resetExhausted zeroes the process-wide counter (tests using it do not run
// in parallel).
func resetExhausted() { exhausted.Store(0) }

func funcPC(h Handler) uintptr { return reflect.ValueOf(h).Pointer() }
