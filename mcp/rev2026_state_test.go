package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/transport"
)

var (
	oldSecret = []byte("old secret: 32 random bytes, ok!")
	newSecret = []byte("new secret: 32 random bytes, ok!")
)

// testClock is a clock the test moves.
type testClock struct{ unix atomic.Int64 }

func newTestClock() *testClock {
	c := new(testClock)
	c.unix.Store(1_800_000_000)
	return c
}

func (c *testClock) now() time.Time                       { return time.Unix(c.unix.Load(), 0) }
func (c *testClock) add(d time.Duration)                  { c.unix.Add(int64(d / time.Second)) }
func (c *testClock) opts(o *ServerOptions) *ServerOptions { o.Now = c.now; return o }

// logBuffer collects a server's log lines as JSON objects.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

func (b *logBuffer) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// stateServer returns a server with opts whose log goes to the returned
// buffer.
func stateServer(t *testing.T, opts *ServerOptions) (*Server, *logBuffer) {
	t.Helper()
	logs := new(logBuffer)
	opts.Logger = logs.logger()
	return NewServer(opts), logs
}

var testBinding = sealedState{Method: methodToolsCall, Target: "book-flight", Digest: "digest", Subject: "alice",
	Keys: map[string]string{"confirm": methodElicitationCreate}, State: []byte("handler-private-payload")}

func seal(s *Server) string {
	st := testBinding
	return s.sealState(&st)
}

func open(s *Server, wire string) (*sealedState, *Error) {
	return s.openState(wire, testBinding.Method, testBinding.Target, testBinding.Digest, testBinding.Subject)
}

func TestValidateStateKeys(t *testing.T) {
	tests := []struct {
		name   string
		opts   *ServerOptions
		option string // "" = valid
		msg    string
	}{
		{"nil options", nil, "", ""},
		{"no key", &ServerOptions{}, "", ""},
		{"key of 32 bytes", &ServerOptions{StateKey: oldSecret}, "", ""},
		{"ring", &ServerOptions{StateKeys: []StateKey{{ID: "2026-08", Secret: newSecret}, {ID: "old_1", Secret: oldSecret}}}, "", ""},
		{"empty key", &ServerOptions{StateKey: []byte{}}, "StateKey",
			"mcp: ServerOptions.StateKey: StateKey is empty (an unset environment variable?); set it to at least 32 random bytes shared by every replica (e.g. from `openssl rand -base64 32`), or leave StateKey and StateKeys nil for a random key per process"},
		{"short key", &ServerOptions{StateKey: []byte("secret")}, "StateKey",
			"mcp: ServerOptions.StateKey: StateKey is 6 bytes, too short to be safe; set it to at least 32 random bytes shared by every replica (e.g. from `openssl rand -base64 32`)"},
		{"31 bytes", &ServerOptions{StateKey: oldSecret[:31]}, "StateKey", "StateKey is 31 bytes"},
		{"both", &ServerOptions{StateKey: oldSecret, StateKeys: []StateKey{{ID: "a", Secret: newSecret}}}, "StateKey", "StateKey and StateKeys are both set"},
		{"empty ring", &ServerOptions{StateKeys: []StateKey{}}, "StateKeys", "StateKeys is empty"},
		{"short secret in ring", &ServerOptions{StateKeys: []StateKey{{ID: "a", Secret: newSecret}, {ID: "b", Secret: []byte("short")}}},
			"StateKeys[1].Secret", "mcp: ServerOptions.StateKeys[1].Secret: StateKeys[1].Secret is 5 bytes, too short to be safe"},
		{"empty secret in ring", &ServerOptions{StateKeys: []StateKey{{ID: "a"}}}, "StateKeys[0].Secret", "StateKeys[0].Secret is empty"},
		{"empty id", &ServerOptions{StateKeys: []StateKey{{Secret: newSecret}}}, "StateKeys[0].ID", `key id "" is invalid`},
		{"id with a dot", &ServerOptions{StateKeys: []StateKey{{ID: "v1.2", Secret: newSecret}}}, "StateKeys[0].ID", `key id "v1.2" is invalid`},
		{"long id", &ServerOptions{StateKeys: []StateKey{{ID: strings.Repeat("k", 65), Secret: newSecret}}}, "StateKeys[0].ID", "is invalid"},
		{"duplicate id", &ServerOptions{StateKeys: []StateKey{{ID: "k", Secret: newSecret}, {ID: "k", Secret: oldSecret}}},
			"StateKeys[1].ID", `key id "k" is also the id of StateKeys[0]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			opts := tt.opts
			if opts != nil {
				opts.Logger = slog.New(slog.DiscardHandler)
			}
			if tt.option == "" {
				require.NoError(t, err)
				assert.NotPanics(t, func() { NewServer(opts) })
				return
			}
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tt.option, oe.Option)
			assert.Contains(t, err.Error(), tt.msg)
			defer func() {
				r := recover()
				require.NotNil(t, r, "NewServer must panic")
				perr, ok := r.(error)
				require.True(t, ok, "NewServer panics with the error: %v", r)
				assert.True(t, errors.As(perr, &oe))
				assert.Equal(t, err.Error(), perr.Error())
			}()
			NewServer(opts)
		})
	}
}

// A state sealed under a key verifies while that key is in the ring,
// whichever key is current, and is refused once the key is removed.
func TestStateKeyRotation(t *testing.T) {
	quiet := func(o *ServerOptions) *ServerOptions { o.Logger = slog.New(slog.DiscardHandler); return o }
	before := NewServer(quiet(&ServerOptions{StateKey: oldSecret}))
	adding := NewServer(quiet(&ServerOptions{StateKeys: []StateKey{{ID: DefaultStateKeyID, Secret: oldSecret}, {ID: "2026-08", Secret: newSecret}}}))
	moved := NewServer(quiet(&ServerOptions{StateKeys: []StateKey{{ID: "2026-08", Secret: newSecret}, {ID: DefaultStateKeyID, Secret: oldSecret}}}))
	after, logs := stateServer(t, &ServerOptions{StateKeys: []StateKey{{ID: "2026-08", Secret: newSecret}}})

	oldState, newState := seal(before), seal(moved)
	assert.True(t, strings.HasPrefix(oldState, DefaultStateKeyID+"."), "StateKey has id %q", DefaultStateKeyID)
	assert.True(t, strings.HasPrefix(seal(adding), DefaultStateKeyID+"."), "the first key seals")
	assert.True(t, strings.HasPrefix(newState, "2026-08."), "the first key seals")

	tests := []struct {
		name   string
		server *Server
		wire   string
		ok     bool
	}{
		{"old state, old ring", before, oldState, true},
		{"old state, new key added", adding, oldState, true},
		{"old state, new key current", moved, oldState, true},
		{"old state, old key removed", after, oldState, false},
		{"new state, ring with both", adding, newState, true},
		{"new state, new ring", after, newState, true},
		{"new state, old ring", before, newState, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, e := open(tt.server, tt.wire)
			if tt.ok {
				require.Nil(t, e)
				assert.Equal(t, "handler-private-payload", string(st.State))
				return
			}
			require.NotNil(t, e)
			assert.Equal(t, int64(CodeInvalidParams), e.Code)
			assert.Equal(t, "Invalid params: requestState failed its integrity check", e.Message, "the client is not told which key ids exist")
		})
	}
	assert.Contains(t, logs.String(), `"reason":"unknown key id"`)

	// The same secret under another id is another key.
	renamed := NewServer(quiet(&ServerOptions{StateKeys: []StateKey{{ID: "renamed", Secret: oldSecret}}}))
	_, e := open(renamed, "renamed"+strings.TrimPrefix(oldState, DefaultStateKeyID))
	require.NotNil(t, e, "the key id is bound to the state")
}

// Any change to a sealed state is refused.
func TestStateTampering(t *testing.T) {
	s, _ := stateServer(t, &ServerOptions{StateKey: oldSecret})
	wire := seal(s)
	_, e := open(s, wire)
	require.Nil(t, e)

	var variants []string
	for i := range len(wire) {
		for _, c := range []byte{'A', 'z', '0', '-', '_', '.', '=', '\n'} {
			if wire[i] != c {
				variants = append(variants, wire[:i]+string(c)+wire[i+1:])
			}
		}
		variants = append(variants, wire[:i]+wire[i+1:], wire[:i]+"\n"+wire[i:], wire[:i])
	}
	// every bit of the encrypted payload flipped
	kid, payload, _ := strings.Cut(wire, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	require.NoError(t, err)
	for i := range len(raw) * 8 {
		b := bytes.Clone(raw)
		b[i/8] ^= 1 << (i % 8)
		variants = append(variants, kid+"."+base64.RawURLEncoding.EncodeToString(b))
	}
	variants = append(variants, wire+"A", wire+"\r\n", "", ".", kid+".", "."+payload)
	for _, v := range variants {
		st, e := open(s, v)
		require.NotNil(t, e, "accepted a changed state %q", v)
		assert.Nil(t, st)
		assert.Equal(t, int64(CodeInvalidParams), e.Code)
	}
}

// The client cannot read what a state holds.
func TestStateUnreadable(t *testing.T) {
	s, _ := stateServer(t, &ServerOptions{StateKey: oldSecret})
	wire := seal(s)
	kid, payload, ok := strings.Cut(wire, ".")
	require.True(t, ok)
	assert.Equal(t, DefaultStateKeyID, kid)
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	require.NoError(t, err)
	for _, secret := range []string{"book-flight", "alice", "handler-private-payload", "confirm", methodToolsCall, methodElicitationCreate} {
		assert.NotContains(t, wire, secret)
		assert.NotContains(t, string(raw), secret)
	}
	assert.False(t, json.Valid(raw), "the payload is not plain JSON")
	assert.NotEqual(t, wire, seal(s), "each state sealed is distinct")
}

// By default a state can be used again until it expires; in single-use
// mode only once.
func TestStateReplay(t *testing.T) {
	clock := newTestClock()
	tests := []struct {
		name      string
		singleUse bool
		replay    bool // whether a second use verifies
	}{
		{"default: replayable until expiry", false, true},
		{"single use", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, logs := stateServer(t, clock.opts(&ServerOptions{StateKey: oldSecret, StateSingleUse: tt.singleUse}))
			wire := seal(s)
			_, e := open(s, wire)
			require.Nil(t, e)
			_, e = open(s, wire)
			if tt.replay {
				require.Nil(t, e)
				clock.add(10*time.Minute + time.Second)
				_, e = open(s, wire)
				require.NotNil(t, e)
				assert.Equal(t, "Invalid params: requestState has expired", e.Message)
				return
			}
			require.NotNil(t, e)
			assert.Equal(t, "Invalid params: requestState was used already (each requestState is accepted once)", e.Message)
			assert.Contains(t, logs.String(), `"reason":"replayed"`)
			_, e = open(s, seal(s))
			assert.Nil(t, e, "another state is not affected")
		})
	}
}

// Concurrent uses of one state: exactly one wins.
func TestStateSingleUseConcurrent(t *testing.T) {
	s, _ := stateServer(t, &ServerOptions{StateKey: oldSecret, StateSingleUse: true})
	wire := seal(s)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, e := open(s, wire); e == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), ok.Load())
}

// The set of used states is bounded: when full of unexpired states it
// refuses new ones (it never forgets one that could be replayed), and
// makes room as they expire.
func TestStateSingleUseBounded(t *testing.T) {
	clock := newTestClock()
	s, logs := stateServer(t, clock.opts(&ServerOptions{StateKey: oldSecret, StateSingleUse: true, MaxUsedStates: 2, StateTTL: time.Minute}))
	a, b := seal(s), seal(s)
	clock.add(30 * time.Second)
	c, d := seal(s), seal(s)
	for _, w := range []string{a, b} {
		_, e := open(s, w)
		require.Nil(t, e)
	}
	_, e := open(s, c)
	require.NotNil(t, e)
	assert.Contains(t, e.Message, "MaxUsedStates (2)")
	assert.Equal(t, usedStatesData{Limit: "MaxUsedStates", MaxUsedStates: 2}, e.Data)
	assert.Contains(t, logs.String(), `"reason":"too many used states"`)
	_, e = open(s, a)
	require.NotNil(t, e, "a full set still remembers what it holds")
	assert.Contains(t, e.Message, "used already")

	clock.add(31 * time.Second) // a and b have expired; c and d have not
	for _, w := range []string{c, d} {
		_, e := open(s, w)
		require.Nil(t, e, "room was made by expiry")
	}
	assert.Equal(t, 2, s.states.used.len())
	_, e = open(s, c)
	require.NotNil(t, e)
	assert.Contains(t, e.Message, "used already")
}

// Every refusal is logged with its reason, never with the whole state or
// the secret.
func TestStateRefusalsLogged(t *testing.T) {
	clock := newTestClock()
	s, logs := stateServer(t, clock.opts(&ServerOptions{StateKey: oldSecret, StateSingleUse: true}))
	other := NewServer(&ServerOptions{StateKey: newSecret, Logger: slog.New(slog.DiscardHandler)})
	expired := seal(s)
	clock.add(11 * time.Minute)
	fresh, used := seal(s), seal(s)
	_, e := open(s, used)
	require.Nil(t, e)

	tests := []struct {
		name, wire, method, target, subject, reason, level string
	}{
		{"garbage", "not a state", methodToolsCall, "book-flight", "alice", "integrity", "WARN"},
		{"forged", DefaultStateKeyID + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", methodToolsCall, "book-flight", "alice", "integrity", "WARN"},
		{"other secret", seal(other), methodToolsCall, "book-flight", "alice", "integrity", "WARN"},
		{"unknown key id", "2025" + fresh[len(DefaultStateKeyID):], methodToolsCall, "book-flight", "alice", "unknown key id", "WARN"},
		{"other tool", fresh, methodToolsCall, "cancel-flight", "alice", "other request", "WARN"},
		{"other method", fresh, methodPromptsGet, "book-flight", "alice", "other request", "WARN"},
		{"other caller", fresh, methodToolsCall, "book-flight", "mallory", "other caller", "WARN"},
		{"expired", expired, methodToolsCall, "book-flight", "alice", "expired", "INFO"},
		{"replayed", used, methodToolsCall, "book-flight", "alice", "replayed", "WARN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs.reset()
			_, e := s.openState(tt.wire, tt.method, tt.target, testBinding.Digest, tt.subject)
			require.NotNil(t, e)
			lines := logs.lines(t)
			require.Len(t, lines, 1)
			l := lines[0]
			assert.Equal(t, "mcp: requestState refused", l["msg"])
			assert.Equal(t, tt.reason, l["reason"])
			assert.Equal(t, tt.level, l["level"])
			assert.Equal(t, tt.method, l["method"])
			prefix, _ := l["state"].(string)
			assert.LessOrEqual(t, len(prefix), 15)
			out := logs.String()
			if len(tt.wire) > 15 {
				assert.NotContains(t, out, tt.wire, "the whole state is never logged")
			}
			assert.NotContains(t, out, string(oldSecret))
			assert.NotContains(t, out, "handler-private-payload")
		})
	}
}

// A peer sending forged states cannot flood the log: the lines beyond the
// budget are counted in the next line.
func TestStateRefusalLogBounded(t *testing.T) {
	clock := newTestClock()
	s, logs := stateServer(t, clock.opts(&ServerOptions{StateKey: oldSecret}))
	for range 100 {
		_, e := open(s, "forged")
		require.NotNil(t, e)
	}
	assert.Len(t, logs.lines(t), maxRefusalLogsPerSecond)
	logs.reset()
	clock.add(time.Second)
	_, e := open(s, "forged")
	require.NotNil(t, e)
	lines := logs.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, float64(100-maxRefusalLogsPerSecond), lines[0]["suppressed"])
}

// Without a key a server warns once that replicas will not share states;
// another process refuses its states, and its log says why.
func TestStateRandomKeyWarning(t *testing.T) {
	a, logsA := stateServer(t, &ServerOptions{})
	assert.Empty(t, logsA.String(), "no warning before a state is sealed")
	seal(a)
	seal(a)
	lines := logsA.lines(t)
	require.Len(t, lines, 1, "one warning, at the first state sealed")
	assert.Equal(t, "WARN", lines[0]["level"])
	assert.Contains(t, lines[0]["msg"], "random key")
	assert.Contains(t, lines[0]["msg"], "set ServerOptions.StateKey (or StateKeys)")
	require.Len(t, a.Options().StateKeys, 1)
	assert.Len(t, a.Options().StateKeys[0].Secret, MinStateKeyBytes)

	b, logsB := stateServer(t, &ServerOptions{})
	logsB.reset()
	wire := seal(a)
	_, e := open(a, wire)
	require.Nil(t, e)
	_, e = open(b, wire)
	require.NotNil(t, e, "another process has another key")
	lines = logsB.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, "unknown key id", lines[0]["reason"])
	assert.Contains(t, lines[0]["hint"], "random requestState key")

	for _, o := range []*ServerOptions{{StateKey: oldSecret}, {StateKeys: []StateKey{{ID: "k", Secret: oldSecret}}}} {
		_, logs := stateServer(t, o)
		assert.Empty(t, logs.String(), "no warning with a key")
	}
}

// The effective options hold the ring, copied: changing the caller's
// secret afterwards changes nothing.
func TestStateKeysCopied(t *testing.T) {
	secret := bytes.Clone(oldSecret)
	s, _ := stateServer(t, &ServerOptions{StateKey: secret})
	wire := seal(s)
	secret[0] ^= 1
	_, e := open(s, wire)
	require.Nil(t, e)
	o := s.Options()
	assert.Nil(t, o.StateKey)
	assert.Equal(t, []StateKey{{ID: DefaultStateKeyID, Secret: oldSecret}}, o.StateKeys)
	assert.NoError(t, o.Validate(), "the effective options are valid options")
}

// A requestState is bound to the peer key of the request's token, with
// its kind: a subject that reads "client:app" is not the client app of a
// client-credentials token, and neither is a request without a token.
func TestStateSubjectOfToken(t *testing.T) {
	ctx := context.Background()
	subject := stateSubject(transport.WithTokenInfo(ctx, &transport.TokenInfo{Subject: "client:app"}))
	client := stateSubject(transport.WithTokenInfo(ctx, &transport.TokenInfo{ClientID: "app"}))
	assert.Equal(t, "subject:client:app", subject)
	assert.Equal(t, "client:app", client)
	assert.NotEqual(t, subject, client)
	assert.Empty(t, stateSubject(ctx))

	s, _ := stateServer(t, &ServerOptions{})
	b := testBinding
	b.Subject = subject
	wire := s.sealState(&b)
	_, e := s.openState(wire, b.Method, b.Target, b.Digest, client)
	assert.NotNil(t, e, "a state of the subject is refused to the client")
	_, e = s.openState(wire, b.Method, b.Target, b.Digest, subject)
	assert.Nil(t, e)
}
