package agents_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/agents"
	"github.com/keelmcp/keel/mcp"
)

// noLeaks fails the test if it leaves more goroutines than it found.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		var n int
		for range 200 {
			if n = runtime.NumGoroutine(); n <= before {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
	})
}

// shutdown drains c at the end of the test.
func shutdown(t *testing.T, c *agents.Coordinator) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, c.Shutdown(ctx, agents.ShutdownReject))
	})
}

// eventually waits (up to 2s) for cond.
func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, 2*time.Second, time.Millisecond, what)
}

// queueLength returns the agent's queue length.
func queueLength(c *agents.Coordinator, id string) int {
	st, _ := c.Agent(id)
	return st.QueueLength
}

// structured returns the StructuredError err unwraps to.
func structured(t *testing.T, err error) *mcp.StructuredError {
	t.Helper()
	var se *mcp.StructuredError
	require.ErrorAs(t, err, &se)
	return se
}

// gate is a handler that reports each message it starts on entered and
// waits for release (or its context).
type gate struct {
	entered chan string
	release chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan string, 100), release: make(chan struct{})}
}

func (g *gate) handler(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
	g.entered <- msg.Type
	select {
	case <-g.release:
		return "done:" + msg.Type, nil
	case <-ctx.Done():
		return "cancelled:" + msg.Type, nil
	}
}

func (g *gate) waitEntered(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-g.entered:
		require.Equal(t, want, got)
	case <-time.After(2 * time.Second):
		t.Fatalf("handler did not start %q", want)
	}
}

// sendAsync sends in a goroutine and returns the channel of its outcome.
type outcome struct {
	res any
	err error
}

func sendAsync(ctx context.Context, c *agents.Coordinator, id, typ string) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := c.Send(ctx, id, agents.Message{Type: typ})
		ch <- outcome{res, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(2 * time.Second):
		t.Fatal("Send did not return")
		return outcome{}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
