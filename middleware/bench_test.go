package middleware

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

// benchEcho is the trivial echo tool of examples/echo, as a raw handler, so
// that the benchmarks measure the chain rather than typed decoding.
func benchRegistry(b *testing.B) *registry.Registry {
	reg := registry.New(nil)
	res := mcp.TextResult("hi")
	err := reg.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)},
		func(context.Context, *mcp.ToolCall, json.RawMessage) (*mcp.CallToolResult, error) { return res, nil }, nil)
	if err != nil {
		b.Fatal(err)
	}
	return reg
}

// benchSource calls echo through src in a loop, with a context like the
// Server's: cancellable and carrying the ToolCall.
func benchSource(b *testing.B, src mcp.ToolSource) {
	tc := &mcp.ToolCall{Name: "echo", Arguments: json.RawMessage(`{"message":"hi"}`), CorrelationID: "c", RunID: "r"}
	ctx, cancel := context.WithCancel(mcp.WithToolCall(context.Background(), tc))
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := src.CallTool(ctx, tc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStandardChainEcho is a trivial echo call through the full
// Standard chain (schema validation included).
func BenchmarkStandardChainEcho(b *testing.B) { benchSource(b, Standard(benchRegistry(b), nil)) }

// BenchmarkStandardChainEchoAudited adds a (trivial) audit sink.
func BenchmarkStandardChainEchoAudited(b *testing.B) {
	benchSource(b, Standard(benchRegistry(b), &StandardOptions{AuditSink: discardSink{}}))
}

// BenchmarkRegistryCallTool is the floor: plain dispatch (lookup, validate,
// invoke) without a chain.
func BenchmarkRegistryCallTool(b *testing.B) { benchSource(b, benchRegistry(b)) }

// BenchmarkStage* measure each stage alone in front of Dispatch.
func BenchmarkStageNone(b *testing.B)    { benchSource(b, New(benchRegistry(b))) }
func BenchmarkStageRecover(b *testing.B) { benchSource(b, New(benchRegistry(b), Recover())) }
func BenchmarkStageLimiter(b *testing.B) { benchSource(b, New(benchRegistry(b), Concurrency(10))) }
func BenchmarkStageLock(b *testing.B) {
	benchSource(b, New(benchRegistry(b), Lock(&LockOptions{All: true})))
}
func BenchmarkStageValidate(b *testing.B) { benchSource(b, New(benchRegistry(b), Validate())) }
func BenchmarkStageDeadline(b *testing.B) {
	benchSource(b, New(benchRegistry(b), Deadline(DefaultTimeout)))
}
func BenchmarkStageTimeout(b *testing.B) {
	benchSource(b, New(benchRegistry(b), Timeout(DefaultTimeout)))
}

type discardSink struct{}

func (discardSink) Enter(context.Context, ToolEnterEvent) error { return nil }
func (discardSink) Exit(context.Context, ToolExitEvent) error   { return nil }
