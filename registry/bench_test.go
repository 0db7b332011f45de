package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/registry"
)

var echoArgs = jsontext.Value(`{"message":"hello, world"}`)

func newEchoRegistry(b *testing.B) *registry.Registry {
	b.Helper()
	r := registry.New(nil)
	if err := registry.Register(r, "echo", "Echoes the message.", func(_ context.Context, in echoIn) (string, error) {
		return in.Message, nil
	}, nil); err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkValidateEcho(b *testing.B) {
	r := newEchoRegistry(b)
	tool, _ := r.Lookup("echo")
	b.ReportAllocs()
	for b.Loop() {
		if se := tool.ValidateArguments(json.RawMessage(echoArgs)); se != nil {
			b.Fatal(se)
		}
	}
}

func BenchmarkCallToolEcho(b *testing.B) {
	r := newEchoRegistry(b)
	call := &mcp.ToolCall{Name: "echo", Arguments: json.RawMessage(echoArgs)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.CallTool(ctx, call)
		if err != nil || res.Content[0].Text != "hello, world" {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkCallToolStructured(b *testing.B) {
	type out struct {
		Message string   `json:"message"`
		Length  int      `json:"length"`
		Tags    []string `json:"tags"`
	}
	r := registry.New(nil)
	registry.MustRegister(r, "echo", "", func(_ context.Context, in echoIn) (out, error) {
		return out{Message: in.Message, Length: len(in.Message)}, nil
	}, nil)
	call := &mcp.ToolCall{Name: "echo", Arguments: json.RawMessage(echoArgs)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.CallTool(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	r := registry.New(nil)
	for i := range 100 {
		registry.MustRegister(r, fmt.Sprintf("tool_%03d", i), "", func(context.Context, echoIn) (string, error) { return "", nil }, nil)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := r.Lookup("tool_042"); !ok {
				b.Fatal("missing")
			}
		}
	})
}
