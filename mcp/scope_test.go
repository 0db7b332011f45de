package mcp

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

// scopeProbe is a server whose Middleware records, for every request and
// notification it serves, the scope it was handed to and the revision the
// request reports; the custom method "acme/probe" and notification
// "acme/note" let a test send both.
type scopeProbe struct {
	t    *testing.T
	ct   transport.Transport
	mu   sync.Mutex
	seen []scopeSeen
}

// scopeSeen is what scopeProbe recorded of one message.
type scopeSeen struct {
	method  string
	scope   scope
	version string
}

func startScopeProbe(t *testing.T) *scopeProbe {
	t.Helper()
	p := &scopeProbe{t: t}
	record := func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, req *Request) (any, error) {
			p.mu.Lock()
			p.seen = append(p.seen, scopeSeen{method: req.Method, scope: req.r.sc, version: req.ProtocolVersion()})
			p.mu.Unlock()
			return next(ctx, req)
		}
	}
	noop := func(context.Context, *Request) (any, error) { return nil, nil }
	srv := NewServer(&ServerOptions{Logger: slog.New(slog.DiscardHandler), Middleware: []Middleware{record},
		Methods: map[string]MethodHandler{"acme/probe": noop}, Notifications: map[string]MethodHandler{"acme/note": noop}})
	ct, st := transport.NewPipe(nil)
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), st) }()
	t.Cleanup(func() {
		ct.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server Run did not return")
		}
	})
	p.ct = ct
	return p
}

// send writes line; with answer, it reads the server's answer.
func (p *scopeProbe) send(line string, answer bool) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(p.t, p.ct.Write(ctx, []byte(line)))
	if !answer {
		return ""
	}
	b, err := p.ct.Read(ctx)
	require.NoError(p.t, err)
	return string(b)
}

// last returns what the probe recorded of the last message it served.
func (p *scopeProbe) last() scopeSeen {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.NotEmpty(p.t, p.seen)
	return p.seen[len(p.seen)-1]
}

const scopeMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestModernMessagesCarryTheirOwnScope: a 2026-07-28 request or
// notification is served in the scope of its own _meta, its revision read
// from there, in both builds.
func TestModernMessagesCarryTheirOwnScope(t *testing.T) {
	p := startScopeProbe(t)
	tests := []struct {
		name, line string
		answer     bool
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"acme/probe","params":{` + scopeMeta + `}}`, true},
		{"notification", `{"jsonrpc":"2.0","method":"acme/note","params":{` + scopeMeta + `}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.send(tt.line, tt.answer)
			if !tt.answer { // a request after it: the notification has been served
				p.send(`{"jsonrpc":"2.0","id":99,"method":"acme/probe","params":{`+scopeMeta+`}}`, true)
				p.mu.Lock()
				require.GreaterOrEqual(t, len(p.seen), 2)
				seen := p.seen[len(p.seen)-2]
				p.mu.Unlock()
				assert.Equal(t, "acme/note", seen.method)
				assert.IsType(t, &modernReq{}, seen.scope)
				assert.Equal(t, Version20260728, seen.version)
				return
			}
			seen := p.last()
			assert.IsType(t, &modernReq{}, seen.scope)
			assert.Equal(t, Version20260728, seen.version)
		})
	}
}

// TestScopeValues: each kind of scope names its engine and revision, with
// no nil default: a session's follows what initialize negotiated when it is
// read; a 2026-07-28 request's is its _meta's; one handed to the
// 2026-07-28 engine before its _meta is checked is answered by that
// engine's rules (its error codes).
func TestScopeValues(t *testing.T) {
	ss := scopeSession(t)

	tests := []struct {
		name    string
		sc      scope
		engine  engine
		version string
	}{
		{"session before initialize", sessionScope{ss}, connectionEngine, ""},
		{"2026-07-28 before its _meta", unmarkedScope{ss}, modernEngine{}, ""},
		{"2026-07-28 request", &modernReq{meta: requestMeta{ProtocolVersion: Version20260728}}, modernEngine{}, Version20260728},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := responder{ss: ss, sc: tt.sc}
			assert.Equal(t, tt.engine, r.engine())
			assert.Equal(t, tt.version, r.version())
			_, isModern := tt.sc.(*modernReq)
			assert.Equal(t, isModern, r.modern() != nil, "modern() is the request's state exactly when it has one")
		})
	}
	r := responder{ss: ss, sc: unmarkedScope{ss}}
	assert.Equal(t, int64(CodeInvalidParams), r.engine().errorCode(CodeResourceNotFound),
		"a request handed to the 2026-07-28 engine is answered by its rules even before its _meta is checked")
}

// TestSessionScopeDoesNotAllocate: setting and reading the scope of a
// request served under its session's rules allocates nothing (the scope is
// the session pointer itself).
func TestSessionScopeDoesNotAllocate(t *testing.T) {
	ss := scopeSession(t)
	var sink string
	allocs := testing.AllocsPerRun(100, func() {
		r := responder{ss: ss}
		r.sc = sessionScope{ss}
		r.engine()
		sink = r.version()
		r.sc = unmarkedScope{ss}
		r.engine()
		sink = r.version()
	})
	assert.Zero(t, allocs)
	assert.Empty(t, sink)
}

// scopeSession returns a session that has read nothing.
func scopeSession(t *testing.T) *Session {
	t.Helper()
	srv := NewServer(&ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	ct, st := transport.NewPipe(nil)
	t.Cleanup(func() { ct.Close(); st.Close() })
	return srv.newSession(st, false)
}
