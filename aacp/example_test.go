package aacp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/agents"
)

// A request from one agent to another through a Node: the handler runs
// once, its result comes back, and the ledger holds the outcome.
func ExampleNode_SendRequest() {
	ctx := context.Background()
	mux := aacp.NewMux()
	mux.HandleFunc("greeter", func(ctx context.Context, env *aacp.Envelope) (any, error) {
		var name string
		if err := env.Decode(&name); err != nil {
			return nil, err
		}
		return "hello, " + name, nil
	})
	store := aacp.NewMemoryStore() // sqlstore.OpenSQLite("ledger.db") for a durable ledger
	node := aacp.New(store, mux, nil)
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Close(ctx)

	res, err := node.SendRequest(ctx, "planner", "greeter", "keel")
	fmt.Println(string(res), err)

	session, _ := node.Session(ctx, "planner", "greeter")
	fmt.Println("next seq:", session.NextSeq)
	// Output:
	// "hello, keel" <nil>
	// next seq: 2
}

// Idempotent requests: a caller that saves its requestId can send again
// (after a restart, say) without the handler running twice.
func ExampleWithRequestID() {
	ctx := context.Background()
	runs := 0
	mux := aacp.NewMux()
	mux.HandleFunc("counter", func(context.Context, *aacp.Envelope) (any, error) {
		runs++
		return runs, nil
	})
	node := aacp.New(aacp.NewMemoryStore(), mux, nil)
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Close(ctx)

	id := "1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b"
	first, _ := node.SendRequest(ctx, "client", "counter", nil, aacp.WithRequestID(id))
	again, _ := node.SendRequest(ctx, "client", "counter", nil, aacp.WithRequestID(id))
	fmt.Println(string(first), string(again), "runs:", runs)
	// Output: 1 1 runs: 1
}

// SendRequest and SendReliable on an agents.Coordinator: the agent's
// handler processes reliable messages in its queue like any other.
func ExampleCoordinator() {
	ctx := context.Background()
	c := aacp.NewCoordinator(agents.NewCoordinator(nil), aacp.NewMemoryStore(), nil)
	defer c.Shutdown(ctx, agents.ShutdownDrain)
	defer c.Close(ctx)
	err := c.Register("doubler", func(ctx context.Context, msg agents.Message, ac *agents.AgentContext) (any, error) {
		var n int
		if err := msg.DecodePayload(&n); err != nil {
			return nil, err
		}
		return 2 * n, nil
	}, nil)
	if err != nil {
		panic(err)
	}
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	res, err := c.SendRequest(ctx, "doubler", 21)
	fmt.Println(string(res), err)
	// Output: 42 <nil>
}

// A caller that stops waiting learns UNKNOWN, not failure: the work may
// still complete, and Await finds its result later.
func ExampleUnknownOutcomeError() {
	ctx := context.Background()
	release := make(chan struct{})
	mux := aacp.NewMux()
	mux.HandleFunc("slow", func(context.Context, *aacp.Envelope) (any, error) {
		<-release
		return "done", nil
	})
	node := aacp.New(aacp.NewMemoryStore(), mux, nil)
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Close(ctx)

	id, _ := node.Submit(ctx, "client", "slow", nil)
	wait, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err := node.Await(wait, id)
	fmt.Println(errors.Is(err, aacp.ErrUnknownOutcome))

	close(release)
	res, _ := node.Await(ctx, id)
	fmt.Println(res.Outcome, string(res.Result))
	// Output:
	// true
	// COMPLETED "done"
}

// The strict envelope codec.
func ExampleDecodeEnvelope() {
	data := []byte(`{"messageId":"6f1c1f0e-6f55-4b8e-9a0e-3a3f1e1b2c3d","requestId":"0d2a9e64-8b4f-4c1e-8d8e-5b9f2f7e1a20",` +
		`"sourceAgentId":"planner","targetAgentId":"coder","seq":1,"messageType":"REQUEST",` +
		`"timestamp":"2026-05-06T07:08:09Z","payload":{"task":"build"}}`)
	env, err := aacp.DecodeEnvelope(data)
	fmt.Println(env.SourceAgentID, "→", env.TargetAgentID, env.Seq, env.MessageType, string(env.Payload), err)

	_, err = aacp.DecodeEnvelope([]byte(`{"messageId":"x","MessageID":"y"}`))
	fmt.Println(err)
	// Output:
	// planner → coder 1 REQUEST {"task":"build"} <nil>
	// aacp: invalid envelope: MessageID: unknown member
}

var _ jsontext.Value

// Two Nodes host the same agent on one ledger: the first to start owns it
// (its lease's fencing token is 1) and runs every request, also those sent
// through the other; the other waits, and takes the agent over (token 2)
// when the owner stops and releases the lease, or when the lease expires.
func ExampleNode_Owns() {
	ctx := context.Background()
	store := aacp.NewMemoryStore() // one ledger: a PostgreSQL database for several processes
	worker := func(node string) *aacp.Mux {
		mux := aacp.NewMux()
		mux.HandleFunc("worker", func(context.Context, *aacp.Envelope) (any, error) { return "ran on " + node, nil })
		return mux
	}
	opts := func(id string) *aacp.Options {
		return &aacp.Options{ID: id, LeaseTTL: time.Second, LeaseRenewInterval: 10 * time.Millisecond}
	}
	a := aacp.New(store, worker("a"), opts("node-a"))
	b := aacp.New(store, worker("b"), opts("node-b"))
	for _, n := range []*aacp.Node{a, b} {
		if err := n.Start(ctx); err != nil {
			panic(err)
		}
		defer n.Close(ctx)
	}
	lease, _ := store.GetLease(ctx, "worker")
	fmt.Println("a owns:", a.Owns("worker"), "b owns:", b.Owns("worker"), "token:", lease.Token)
	res, _ := b.SendRequest(ctx, "client", "worker", nil)
	fmt.Println(string(res))

	_ = a.Close(ctx) // releases the lease
	for !b.Owns("worker") {
		time.Sleep(time.Millisecond)
	}
	lease, _ = store.GetLease(ctx, "worker")
	fmt.Println("b owns:", b.Owns("worker"), "token:", lease.Token)
	res, _ = b.SendRequest(ctx, "client", "worker", nil)
	fmt.Println(string(res))
	// Output:
	// a owns: true b owns: false token: 1
	// "ran on a"
	// b owns: true token: 2
	// "ran on b"
}
