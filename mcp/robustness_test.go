package mcp

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

// oneShot delivers msgs, then EOF once eof is closed (a per-request HTTP
// session's transport, reduced).
type oneShot struct {
	mu   sync.Mutex
	msgs [][]byte
	eof  chan struct{}
}

func (t *oneShot) Read(ctx context.Context) ([]byte, error) {
	t.mu.Lock()
	if len(t.msgs) > 0 {
		m := t.msgs[0]
		t.msgs = t.msgs[1:]
		t.mu.Unlock()
		return m, nil
	}
	t.mu.Unlock()
	select {
	case <-t.eof:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (t *oneShot) Write(context.Context, []byte) error { return nil }
func (t *oneShot) Close() error                        { return nil }
func (t *oneShot) Kind() string                        { return "http" }

// stubbornTools has one tool that ignores its context until released.
type stubbornTools struct{ release chan struct{} }

func (stubbornTools) ListTools(context.Context) ([]*Tool, error) {
	return []*Tool{{Name: "block", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (s stubbornTools) CallTool(context.Context, *ToolCall) (*CallToolResult, error) {
	<-s.release
	return &CallToolResult{}, nil
}

// A per-request (stateless 2026-07-28) session runs its one request on the
// reader; a handler that ignores its context still cannot keep Run past
// ShutdownTimeout once Run's context is cancelled.
func TestPerRequestRunBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := NewServer(&ServerOptions{Tools: stubbornTools{release}, ShutdownTimeout: 100 * time.Millisecond, StateKey: make([]byte, 32)})
	tr := &oneShot{eof: make(chan struct{}), msgs: [][]byte{[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)}}
	ctx, cancel := context.WithCancel(transport.WithStatelessRequest(context.Background(), transport.StatelessRequest{ProtocolVersion: Version20260728}))
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, tr) }()
	time.Sleep(50 * time.Millisecond)
	close(tr.eof)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
}

// No data race between dispatching a lasting request and the cancellation
// of everything when the peer goes away (run with -race).
func TestDispatchRacesPeerGone(t *testing.T) {
	for i := 0; i < 50; i++ {
		s := NewServer(&ServerOptions{Tools: stubbornTools{}, ShutdownTimeout: 50 * time.Millisecond, StateKey: make([]byte, 32)})
		ct, st := transport.NewPipe(nil)
		done := make(chan error, 1)
		go func() { done <- s.Run(context.Background(), st) }()
		for j := 0; j < 5; j++ {
			_ = ct.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+string(rune('1'+j))+`,"method":"subscriptions/listen","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		}
		ct.Close()
		<-done
	}
}
