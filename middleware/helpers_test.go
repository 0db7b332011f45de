package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/exampletest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
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
	once    sync.Once
}

// free closes release (once).
func (tt *testTools) free() { tt.once.Do(func() { close(tt.release) }) }

func newTestTools(t testing.TB) *testTools {
	tt := &testTools{reg: registry.New(nil), started: make(chan context.Context, 100), release: make(chan struct{})}
	raw := func(name string, h registry.ToolHandler, opts *registry.ToolOptions) {
		require.NoError(t, tt.reg.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, h, opts))
	}
	registry.MustRegister(tt.reg, "echo", "Echoes.", func(_ context.Context, in echoIn) (string, error) { return in.Message, nil }, nil)
	raw("panic", func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) {
		panic("boom")
	}, nil)
	blocking := func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
		tt.started <- ctx
		<-tt.release
		return mcp.TextResult("done"), nil
	}
	raw("block", blocking, nil)
	raw("serial", blocking, &registry.ToolOptions{Serial: true})
	raw("cooperate", func(ctx context.Context, _ *mcp.ToolCall, _ json.RawMessage) (*mcp.CallToolResult, error) {
		tt.started <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	}, nil)
	raw("nilres", func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) { return nil, nil }, nil)
	return tt
}

// call returns a ToolCall with fixed ids and, if logs is not nil, a logger
// writing to it.
func call(name, args string, logs *exampletest.SafeBuffer) *mcp.ToolCall {
	tc := &mcp.ToolCall{Name: name, Arguments: json.RawMessage(args), CorrelationID: "corr-1", RunID: "run-1"}
	if logs != nil {
		tc.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		tc.Logger = slog.New(slog.DiscardHandler)
	}
	return tc
}

// served is a ToolSource behind a real mcp.Server over an in-memory pipe,
// with an mcp.Client connected to it: what the client receives is what the
// Server answered, and early answers are observed as the peer sees them.
type served struct {
	client  *mcp.Client
	wire    *wire                   // every message the client read
	logs    *exampletest.SafeBuffer // the Server's records (the calls' included), from Debug up
	returns chan returned           // what the ToolSource's CallTool returned, in order
}

// returned is one return of the served ToolSource's CallTool.
type returned struct {
	name string
	res  *mcp.CallToolResult
	err  error
}

// tap passes calls to a ToolSource and records what its CallTool returns.
type tap struct {
	mcp.ToolSource
	out chan<- returned
}

func (t tap) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	res, err := t.ToolSource.CallTool(ctx, call)
	t.out <- returned{call.Name, res, err}
	return res, err
}

// wire records what the client end of the pipe reads.
type wire struct {
	transport.Transport
	mu  sync.Mutex
	got []string
}

func (w *wire) Read(ctx context.Context) ([]byte, error) {
	b, err := w.Transport.Read(ctx)
	if err == nil {
		w.mu.Lock()
		w.got = append(w.got, string(b))
		w.mu.Unlock()
	}
	return b, err
}

// count returns how many messages read so far contain sub.
func (w *wire) count(sub string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.got {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// serve runs src behind a Server and connects a Client to it; both end
// with the test (the test must let blocked handlers return first).
func serve(t testing.TB, src mcp.ToolSource) *served {
	t.Helper()
	s := &served{logs: new(exampletest.SafeBuffer), returns: make(chan returned, 100)}
	srv := mcp.NewServer(&mcp.ServerOptions{
		Tools:  tap{src, s.returns},
		Logger: slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	ct, st := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	s.wire = &wire{Transport: ct}
	s.client = mcp.NewClient(&mcp.ClientOptions{ProtocolVersion: testProtocolVersion, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	require.NoError(t, s.client.Connect(ctx, s.wire))
	t.Cleanup(func() {
		assert.NoError(t, s.client.Close())
		assert.NoError(t, <-done)
	})
	return s
}

// waitLimit bounds every wait for an answer: a test whose answer never
// comes fails instead of hanging.
const waitLimit = 10 * time.Second

// answer is what the client received for one tools/call, and when.
type answer struct {
	res *mcp.CallToolResult
	err error
	at  time.Time
}

// call sends tools/call name with _meta.correlationId "corr-1" and waits
// (at most waitLimit) for its answer.
func (s *served) call(ctx context.Context, name, args string) answer {
	ctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	res, err := s.client.CallToolWithParams(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args),
		Meta: mcp.Meta{mcp.MetaCorrelationID: "corr-1"}})
	return answer{res, err, time.Now()}
}

// next returns the next return of the served ToolSource (at most waitLimit).
func (s *served) next(t testing.TB) returned {
	t.Helper()
	select {
	case r := <-s.returns:
		return r
	case <-time.After(waitLimit):
		t.Fatal("CallTool did not return")
		return returned{}
	}
}

// flush makes sure every message the Server wrote before now has reached
// the client (the pipe keeps order).
func (s *served) flush(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err := s.client.ListTools(ctx, "") // a round trip in every revision
	require.NoError(t, err)
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
