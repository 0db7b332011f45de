package main

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/keelmcp/keel/registry"
	"github.com/keelmcp/keel/transport"
)

// Graceful stop. mcp.Server.Run drains when its connection's input ends:
// it stops reading, waits (up to ShutdownTimeout) for the calls in flight,
// sends their answers, then closes the connection and returns. Cancelling
// Run's context instead closes the connection at once, and answers still
// being computed are lost. So a stop — the shutdown tool, SIGINT or
// SIGTERM — ends the input: serve runs the server on a stoppable
// transport, whose Read reports the end of input (io.EOF) as soon as the
// stop is requested, even while the real read is blocked waiting for the
// client. Requests the client sends after that are not read.

// stopper is a one-shot stop request.
type stopper struct {
	once sync.Once
	ch   chan struct{}
}

func newStopper() *stopper { return &stopper{ch: make(chan struct{})} }

// Stop requests the stop; later calls do nothing.
func (s *stopper) Stop() { s.once.Do(func() { close(s.ch) }) }

// Done is closed once Stop has been called.
func (s *stopper) Done() <-chan struct{} { return s.ch }

// stoppable wraps a transport so that its input ends when stop is done.
// The wrapped transport's Read runs on a goroutine of its own, one message
// per call of Read (so each message stays valid until the next Read, as the
// Transport contract says), and Read waits for either that message or the
// stop. The goroutine ends with Close; if the wrapped Read cannot be
// interrupted (a blocking os.Stdin), it ends when that read returns, or
// with the process.
type stoppable struct {
	transport.Transport
	stop      <-chan struct{}
	reqs      chan context.Context // a Read asks the reader for one message
	results   chan readResult      // and gets it here
	closed    chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
}

type readResult struct {
	msg []byte
	err error
}

func newStoppable(t transport.Transport, stop <-chan struct{}) *stoppable {
	return &stoppable{
		Transport: t,
		stop:      stop,
		reqs:      make(chan context.Context),
		results:   make(chan readResult, 1), // an abandoned result never blocks the reader
		closed:    make(chan struct{}),
	}
}

// Read returns the next message of the wrapped transport, or io.EOF once
// the stop is requested.
func (s *stoppable) Read(ctx context.Context) ([]byte, error) {
	select {
	case <-s.stop:
		return nil, io.EOF
	default:
	}
	s.startOnce.Do(func() { go s.readLoop() })
	select {
	case s.reqs <- ctx:
	case <-s.stop:
		return nil, io.EOF
	case <-s.closed:
		return nil, io.EOF
	}
	select {
	case r := <-s.results:
		return r.msg, r.err
	case <-s.stop:
		return nil, io.EOF
	}
}

// readLoop reads one message per request until Close.
func (s *stoppable) readLoop() {
	for {
		select {
		case ctx := <-s.reqs:
			msg, err := s.Transport.Read(ctx)
			s.results <- readResult{msg, err}
		case <-s.closed:
			return
		}
	}
}

// Close closes the wrapped transport, which ends a read blocked in it
// where the stream allows, and then the reader goroutine.
func (s *stoppable) Close() error {
	err := s.Transport.Close()
	s.closeOnce.Do(func() { close(s.closed) })
	return err
}

// ShutdownInput is the shutdown tool's input.
type ShutdownInput struct {
	Reason string `json:"reason,omitempty" jsonschema:"maxLength=200,description=Why the server is being stopped (logged)"`
}

// ShutdownOutput is the shutdown tool's result.
type ShutdownOutput struct {
	// Stopping is true: the server has stopped reading requests.
	Stopping bool `json:"stopping"`
	// DrainTimeoutMs is how long calls in flight may still take to finish
	// and be answered (server.shutdownTimeoutMs).
	DrainTimeoutMs int64 `json:"drainTimeoutMs" jsonschema:"minimum=0"`
}

// registerShutdownTool registers shutdown: it stops the server gracefully
// (stop), letting calls in flight finish and be answered for up to drain,
// then the process exits. Destructive, and in the lifecycle module, which
// the admin policy gates (see admission).
func (a *app) registerShutdownTool(reg *registry.Registry, drain time.Duration) {
	registry.MustRegister(reg, "shutdown",
		"Stops the server gracefully: it stops reading requests, lets the calls in flight finish and be answered, then exits. Later calls fail: the connection is closed.",
		func(ctx context.Context, in ShutdownInput) (ShutdownOutput, error) {
			a.log.Warn("agentops: shutdown requested", "reason", in.Reason)
			a.stop.Stop()
			return ShutdownOutput{Stopping: true, DrainTimeoutMs: drain.Milliseconds()}, nil
		},
		&registry.ToolOptions{Title: "Shut down the server", Destructive: true, Module: lifecycleModule})
}

// SleepInput is test_sleep's input.
type SleepInput struct {
	Ms int `json:"ms" jsonschema:"minimum=0,maximum=60000,description=How long to sleep\\, in milliseconds"`
}

// SleepOutput is test_sleep's result.
type SleepOutput struct {
	SleptMs int `json:"sleptMs" jsonschema:"minimum=0"`
}

// registerTestTools registers the test-only tools (module "test": only
// mode TEST lists them): test_sleep, a slow call for trying cancellation,
// timeouts and the shutdown drain.
func registerTestTools(reg *registry.Registry) {
	registry.MustRegister(reg, "test_sleep", "Sleeps for ms milliseconds (or until cancelled), then reports it. Test mode only.",
		func(ctx context.Context, in SleepInput) (SleepOutput, error) {
			t := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return SleepOutput{SleptMs: in.Ms}, nil
			case <-ctx.Done():
				return SleepOutput{}, ctx.Err()
			}
		},
		&registry.ToolOptions{Title: "Sleep", ReadOnly: true, Module: "test"})
}
