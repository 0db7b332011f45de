package agents_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/keelmcp/keel/agents"
)

func nop(context.Context, agents.Message, *agents.AgentContext) (any, error) { return nil, nil }

// BenchmarkSend measures one caller sending to one idle agent: queue, start
// the agent's goroutine, run the handler, answer.
func BenchmarkSend(b *testing.B) {
	c := agents.NewCoordinator(nil)
	defer c.Shutdown(context.Background(), agents.ShutdownReject)
	_ = c.Register("a", nop, nil)
	ctx := context.Background()
	msg := agents.Message{Type: "x"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Send(ctx, "a", msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendParallel: every goroutine has its own agent.
func BenchmarkSendParallel(b *testing.B) {
	c := agents.NewCoordinator(nil)
	defer c.Shutdown(context.Background(), agents.ShutdownReject)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := strconv.FormatInt(next.Add(1), 10)
		_ = c.Register(id, nop, nil)
		msg := agents.Message{Type: "x"}
		for pb.Next() {
			if _, err := c.Send(context.Background(), id, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSendSharedAgent: all goroutines send to one agent, so messages
// queue and the agent's goroutine stays up.
func BenchmarkSendSharedAgent(b *testing.B) {
	c := agents.NewCoordinator(nil)
	defer c.Shutdown(context.Background(), agents.ShutdownReject)
	_ = c.Register("a", nop, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		msg := agents.Message{Type: "x"}
		for pb.Next() {
			if _, err := c.Send(context.Background(), "a", msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSendWithState: each message changes one key.
func BenchmarkSendWithState(b *testing.B) {
	c := agents.NewCoordinator(nil)
	defer c.Shutdown(context.Background(), agents.ShutdownReject)
	_ = c.Register("a", func(_ context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		return nil, ac.State.Set("n", msg.Payload)
	}, nil)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := c.Send(ctx, "a", agents.Message{Type: "x", Payload: i}); err != nil {
			b.Fatal(err)
		}
	}
}
