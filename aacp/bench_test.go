package aacp_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
)

// benchRequests measures reliable request/response round trips per second
// (each one a REQUEST and a RESPONSE message, both recorded in the ledger,
// the request resolved COMPLETED) from parallel callers, each its own
// source agent, to one echo agent in the same process.
func benchRequests(b *testing.B, store aacp.Store, opts *aacp.Options, parallelism int) {
	mux := aacp.NewMux()
	mux.HandleFunc("echo", func(_ context.Context, env *aacp.Envelope) (any, error) { return env.Payload, nil })
	o := aacp.Options{Logger: quiet}
	if opts != nil {
		o = *opts
		o.Logger = quiet
	}
	node := aacp.New(store, mux, &o)
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer node.Close(ctx)
	payload := jsontext.Value(`{"op":"echo","n":1}`)
	var callers atomic.Int32
	b.SetParallelism(parallelism)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		source := fmt.Sprintf("caller-%d", callers.Add(1))
		for pb.Next() {
			if _, err := node.SendRequest(ctx, source, "echo", payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/elapsed, "req/s")
	b.ReportMetric(2*float64(b.N)/elapsed, "msgs/s")
}

// BenchmarkSendRequestMemory: the in-memory ledger, records kept for 1s
// (purged every 100ms) so that the benchmark measures a steady state.
func BenchmarkSendRequestMemory(b *testing.B) {
	benchRequests(b, aacp.NewMemoryStore(), &aacp.Options{DefaultTTL: time.Second, PurgeInterval: 100 * time.Millisecond}, 1)
}

// BenchmarkSendRequestSQLite: the SQLite ledger in a file, with
// synchronous=FULL (the default: durable across power loss) and NORMAL
// (durable across process crashes), with one caller per core and with 8
// per core (whose writes share transactions: group commit).
func BenchmarkSendRequestSQLite(b *testing.B) {
	for _, mode := range []string{"FULL", "NORMAL"} {
		for _, par := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/callers=%dxGOMAXPROCS", mode, par), func(b *testing.B) {
				store, err := sqlstore.OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"), sqlstore.WithSynchronous(mode))
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				benchRequests(b, store, nil, par)
			})
		}
	}
}

// BenchmarkSendReliableMemory: one-way EVENTs, processed in the
// background.
func BenchmarkSendReliableMemory(b *testing.B) {
	var handled atomic.Int64
	mux := aacp.NewMux()
	mux.HandleFunc("sink", func(context.Context, *aacp.Envelope) (any, error) { handled.Add(1); return nil, nil })
	node := aacp.New(aacp.NewMemoryStore(), mux, &aacp.Options{Logger: quiet, DefaultTTL: time.Second,
		PurgeInterval: 100 * time.Millisecond, MaxBackground: 1024})
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer node.Close(ctx)
	payload := jsontext.Value(`{"event":"tick"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := node.SendReliable(ctx, "producer", "sink", payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnvelopeCodec(b *testing.B) {
	env := &aacp.Envelope{MessageID: "6f1c1f0e-6f55-4b8e-9a0e-3a3f1e1b2c3d", RequestID: "0d2a9e64-8b4f-4c1e-8d8e-5b9f2f7e1a20",
		SourceAgentID: "planner", TargetAgentID: "coder", Seq: 7, Ack: 3, MessageType: aacp.MessageRequest,
		Timestamp: time.Now(), Payload: jsontext.Value(`{"task":"build","n":[1,2]}`)}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		data, err := aacp.EncodeEnvelope(env)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := aacp.DecodeEnvelope(data); err != nil {
			b.Fatal(err)
		}
	}
}
