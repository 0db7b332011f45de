package mcptest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/mcp"
	"github.com/keelmcp/keel/transport"
)

// FixedTime is the clock of deterministic test servers.
var FixedTime = time.Date(2025, 11, 25, 12, 0, 0, 0, time.UTC)

// SequentialIDs returns an id generator yielding prefix+"1", prefix+"2", ...
// It is safe for concurrent use.
func SequentialIDs(prefix string) func() string {
	var n atomic.Int64
	return func() string { return prefix + strconv.FormatInt(n.Add(1), 10) }
}

// ServerOptions returns deterministic options for a test server serving
// tools: name "keel-test", version "0.1.0", ids "id-1", "id-2", ... (the
// first is the connection's correlation id), the FixedTime clock, a logger
// that discards everything and a ShutdownTimeout of 100ms.
func ServerOptions(tools mcp.ToolSource) *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Name:            "keel-test",
		Version:         "0.1.0",
		Tools:           tools,
		Logger:          slog.New(slog.DiscardHandler),
		Now:             func() time.Time { return FixedTime },
		NewID:           SequentialIDs("id-"),
		ShutdownTimeout: 100 * time.Millisecond,
		StateKey:        []byte("mcptest: a fixed requestState key"),
	}
}

// StartServer runs a server with opts on one end of a transport.NewPipe
// (popts may be nil) and returns the other end. wait closes nothing; it
// returns Run's result, failing t if Run has not returned within 5 seconds
// of the call. A test must end the connection (close the returned
// transport, or a Client over it) before calling wait.
func StartServer(t testing.TB, opts *mcp.ServerOptions, popts *transport.PipeOptions) (client transport.Transport, wait func() error) {
	t.Helper()
	ct, st := transport.NewPipe(popts)
	srv := mcp.NewServer(opts)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	return ct, func() error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("mcptest: server Run did not return")
			return nil
		}
	}
}

// Tracker follows one connection from the client's side: it records the
// requests the client sent (id → method) and checks every message the server
// emits against the schema of the negotiated revision (LatestRevision until
// the initialize result arrives). It is safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	rev     string
	methods map[string]string
	// modern holds the revision of each request that named one in its
	// _meta (2026-07-28); lastModern is the latest, used for
	// notifications on a connection that never initialized.
	modern      map[string]string
	lastModern  string
	initialized bool
}

// NewTracker returns a Tracker for a new connection.
func NewTracker() *Tracker {
	return &Tracker{rev: LatestRevision, methods: map[string]string{}, modern: map[string]string{}}
}

type idMethod struct {
	ID     jsontext.Value `json:"id"`
	Method string         `json:"method"`
	Params jsontext.Value `json:"params"`
}

// requestRevision returns the revision a request's params._meta names, or "".
func requestRevision(params jsontext.Value) string {
	var p struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if params.Kind() != '{' || json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.Meta.Version
}

// Sent records the requests in msg (one message or a batch) the client
// sent. Malformed input is ignored.
func (tr *Tracker) Sent(msg []byte) {
	var one idMethod
	var many []idMethod
	if json.Unmarshal(msg, &one) != nil {
		if json.Unmarshal(msg, &many) != nil {
			return
		}
	} else {
		many = []idMethod{one}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, m := range many {
		if m.ID != nil && m.Method != "" {
			tr.methods[IDKey(m.ID)] = m.Method
			if rev := requestRevision(m.Params); slices.Contains(Revisions, rev) {
				tr.modern[IDKey(m.ID)], tr.lastModern = rev, rev
			}
		}
	}
}

// revisionOf returns the revision a server message is checked against: a
// response to a request that named its revision (2026-07-28) is checked
// against that one; a notification on a connection that never initialized
// but sent such requests, against the latest of them; anything else
// against the negotiated revision.
func (tr *Tracker) revisionOf(id jsontext.Value) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if id != nil {
		if rev, ok := tr.modern[IDKey(id)]; ok {
			return rev
		}
		return tr.rev
	}
	if !tr.initialized && tr.lastModern != "" {
		return tr.lastModern
	}
	return tr.rev
}

// Revision returns the revision messages are currently checked against.
func (tr *Tracker) Revision() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.rev
}

// Lookup is the tracker's MethodLookup.
func (tr *Tracker) Lookup(id string) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.methods[id]
}

type responseShape struct {
	ID     jsontext.Value `json:"id"`
	Result jsontext.Value `json:"result"`
	Params struct {
		Meta struct {
			SubscriptionID jsontext.Value `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
	} `json:"params"`
}

// Received checks msg, one message the server emitted. The answer to
// initialize switches the revision to the one it names, and is itself
// checked against that revision. A result whose id matches no request the
// client sent is an error.
func (tr *Tracker) Received(msg []byte) error {
	var shapes []responseShape
	var one responseShape
	if json.Unmarshal(msg, &one) == nil {
		shapes = []responseShape{one}
	} else {
		_ = json.Unmarshal(msg, &shapes)
	}
	for _, s := range shapes {
		if s.ID == nil || s.Result == nil || string(s.Result) == "null" {
			continue
		}
		method := tr.Lookup(IDKey(s.ID))
		if method == "" {
			return fmt.Errorf("a result for id %s, which no request of the client had", s.ID)
		}
		if method == "initialize" {
			var r struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(s.Result, &r)
			if !slices.Contains(Revisions, r.ProtocolVersion) {
				return fmt.Errorf("initialize result names protocol revision %q, which is not one of %v", r.ProtocolVersion, Revisions)
			}
			tr.mu.Lock()
			tr.rev, tr.initialized = r.ProtocolVersion, true
			tr.mu.Unlock()
		}
	}
	var id jsontext.Value
	if len(shapes) > 0 {
		id = shapes[0].ID
		if sub := shapes[0].Params.Meta.SubscriptionID; id == nil && sub != nil {
			id = sub // a notification of a subscription: of its listen request's revision
		}
	}
	return CheckServerMessage(tr.revisionOf(id), tr.Lookup, msg)
}

// ValidateTransport wraps the client end of a connection to a server under
// test: every message read from it (what the server emitted) is checked
// with a Tracker, failing t on a violation; every message written is
// recorded. Use it under a Client in tests so that their traffic is checked
// against the schema of the negotiated revision.
func ValidateTransport(t testing.TB, tr transport.Transport) transport.Transport {
	return &validatingTransport{Transport: tr, t: t, tracker: NewTracker()}
}

type validatingTransport struct {
	transport.Transport
	t       testing.TB
	tracker *Tracker
}

func (v *validatingTransport) Read(ctx context.Context) ([]byte, error) {
	msg, err := v.Transport.Read(ctx)
	if err == nil {
		if verr := v.tracker.Received(msg); verr != nil {
			v.t.Errorf("mcptest: server message %s\nviolates revision %s: %v", msg, v.tracker.Revision(), verr)
		}
	}
	return msg, err
}

func (v *validatingTransport) Write(ctx context.Context, msg []byte) error {
	v.tracker.Sent(msg)
	return v.Transport.Write(ctx, msg)
}
