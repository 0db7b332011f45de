package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/sqlstore"
	"github.com/keelmcp/keel/internal/pgtest"
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
		Timestamp: time.Now(), Payload: json.RawMessage(`{"task":"build","n":[1,2]}`)}
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

// throughputStores are the ledgers BenchmarkThroughput runs on: the
// in-memory store (records kept 1s, purged every 100ms, so that it measures
// a steady state; one minute for events, whose redeliveries come after
// RetransmitTimeout), SQLite in a file with synchronous=FULL (the default),
// and PostgreSQL (a schema of its own on the server of
// KEEL_TEST_POSTGRES_DSN; skipped without it).
var throughputStores = []struct {
	name string
	opts aacp.Options
	open func(b *testing.B) aacp.Store
}{
	{"memory", aacp.Options{DefaultTTL: time.Second, PurgeInterval: 100 * time.Millisecond},
		func(*testing.B) aacp.Store { return aacp.NewMemoryStore() }},
	{"sqlite-full", aacp.Options{}, func(b *testing.B) aacp.Store {
		s, err := sqlstore.OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"), sqlstore.WithSynchronous("FULL"))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"postgres", aacp.Options{}, func(b *testing.B) aacp.Store {
		s, err := sqlstore.OpenPostgres(pgtest.Schema(b))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

// BenchmarkThroughput measures end-to-end throughput the way a team runs
// agents: senders (each its own source agent, on its own goroutine) send
// through a Node to an agent that Node hosts, on one ledger, and a send
// counts once its handler ran and its outcome is recorded COMPLETED in the
// ledger. kind=request: SendRequest, which returns after that (each request
// is two ledger messages, REQUEST and RESPONSE). kind=event: SendReliable,
// counted when OnMessageCompleted reports the event recorded. It reports
// sends/s (completed end to end) and msgs/s (ledger messages written:
// two per request, one per event). Event senders keep at most 1024 events
// in flight between them (a send waits for a completion beyond that), so
// that a burst measures the ledger rather than the receiver's back-pressure.
func BenchmarkThroughput(b *testing.B) {
	for _, st := range throughputStores {
		for _, kind := range []string{"request", "event"} {
			for _, senders := range []int{1, 32, 128} {
				b.Run(fmt.Sprintf("store=%s/kind=%s/senders=%d", st.name, kind, senders), func(b *testing.B) {
					store := st.open(b)
					defer store.Close()
					benchThroughput(b, store, st.opts, kind == "event", senders)
				})
			}
		}
	}
}

func benchThroughput(b *testing.B, store aacp.Store, opts aacp.Options, events bool, senders int) {
	var (
		completed atomic.Int64 // sends that ended, COMPLETED or FAILED
		allDone   = make(chan struct{})
		target    = int64(b.N)
		inflight  = make(chan struct{}, 1024)
	)
	mux := aacp.NewMux()
	mux.HandleFunc("worker", func(_ context.Context, env *aacp.Envelope) (any, error) { return env.Payload, nil })
	opts.Logger = quiet
	if events && opts.DefaultTTL > 0 {
		opts.DefaultTTL = max(opts.DefaultTTL, time.Minute)
	}
	// Background handlers (events) get room for the whole burst: this
	// measures the ledger, not the back-pressure policy.
	opts.MaxBackground = max(opts.MaxBackground, 4096)
	var failed atomic.Int64
	ended := func() { // a send completed or failed
		if events {
			<-inflight
		}
		if completed.Add(1) == target {
			close(allDone)
		}
	}
	opts.OnMessageCompleted = func(*aacp.Envelope, *aacp.Resolution) { ended() }
	opts.OnMessageFailed = func(*aacp.Envelope, *aacp.Resolution) { failed.Add(1); ended() }
	node := aacp.New(store, mux, &opts)
	ctx := context.Background()
	if err := node.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer node.Close(ctx)
	payload := jsontext.Value(`{"op":"work","n":1}`)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range senders {
		wg.Add(1)
		go func(source string) {
			defer wg.Done()
			for next.Add(1) <= target {
				var err error
				if events {
					select {
					case inflight <- struct{}{}:
					case <-time.After(time.Minute):
						b.Errorf("no event ended for a minute (%d of %d ended)", completed.Load(), target)
						return
					}
					_, err = node.SendReliable(ctx, source, "worker", payload)
				} else {
					_, err = node.SendRequest(ctx, source, "worker", payload)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}(fmt.Sprintf("sender-%d", i))
	}
	wg.Wait()
	if !b.Failed() {
		select {
		case <-allDone:
		case <-time.After(time.Minute):
			b.Fatalf("%d of %d sends ended after a minute", completed.Load(), target)
		}
	}
	elapsed := time.Since(start).Seconds()
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Errorf("%d of %d sends ended FAILED", n, target)
	}
	perSend := 2.0
	if events {
		perSend = 1
	}
	b.ReportMetric(float64(b.N)/elapsed, "sends/s")
	b.ReportMetric(perSend*float64(b.N)/elapsed, "msgs/s")
}
