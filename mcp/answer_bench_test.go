package mcp_test

import (
	"context"
	"testing"

	"github.com/keelmcp/keel/internal/mcptest"
	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// benchAnswer serves line b.N times over an in-memory connection (the
// server's whole path: read, dispatch, middleware, encode, write), with
// mws as ServerOptions.Middleware; init is a line sent once before.
func benchAnswer(b *testing.B, mws []mcp.Middleware, init, line string) {
	o := mcptest.ServerOptions(mcptest.NewTools(mcptest.ToolEcho))
	o.Middleware = mws
	srv := mcp.NewServer(o)
	ct, st := transport.NewPipe(nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(context.Background(), st) }()
	b.Cleanup(func() { ct.Close(); <-done })
	ctx := context.Background()
	roundTrip := func(l string) {
		if err := ct.Write(ctx, []byte(l)); err != nil {
			b.Fatal(err)
		}
		if _, err := ct.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if init != "" {
		roundTrip(init)
		if err := ct.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			b.Fatal(err)
		}
	}
	msg := []byte(line)
	b.ReportAllocs()
	for b.Loop() {
		if err := ct.Write(ctx, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := ct.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// passThrough is a Middleware that returns what the chain below returns.
func passThrough(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, req *mcp.Request) (any, error) { return next(ctx, req) }
}

const benchCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}`
const benchInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`
const benchMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// A 2026-07-28 tools/call over an in-memory connection, without and
// with a middleware.
func BenchmarkAnswerModernToolCall(b *testing.B) {
	b.Run("bare", func(b *testing.B) { benchAnswer(b, nil, "", benchCall+`,`+benchMeta+`}}`) })
	b.Run("middleware", func(b *testing.B) {
		benchAnswer(b, []mcp.Middleware{passThrough}, "", benchCall+`,`+benchMeta+`}}`)
	})
}

// The refusal of an unknown method, through the middleware chain.
func BenchmarkAnswerModernUnknownMethod(b *testing.B) {
	benchAnswer(b, []mcp.Middleware{passThrough}, "", `{"jsonrpc":"2.0","id":1,"method":"acme/none","params":{`+benchMeta+`}}`)
}
