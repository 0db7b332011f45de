package mcp

import (
	"container/heap"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/logclip"
)

// The requestState of an input-required result is
//
//	keyID "." base64url(nonce || AES-256-GCM(key of keyID, JSON sealedState))
//
// encrypted and authenticated with the key of keyID (derived from its
// secret with HKDF-SHA-256; the format and keyID are the associated data).
// The client can neither read nor change it. The state binds the method,
// the tool, prompt or resource it was issued for, a digest of the
// request's arguments, the caller (the bearer token's subject, if any),
// the methods of the input requests by key, the round and an expiry. Only
// a state this server (or a replica holding the same key) issued for the
// very same request verifies.
//
// The 12-byte nonce is synthetic: HMAC-SHA-256 of the associated data and
// the plaintext under a second key derived from the secret. Two states get
// the same nonce only if they are the same state (the plaintext holds a
// sequence number of the process), so nonces never repeat under a key
// across replicas, no random source is needed, and a server with a fixed
// clock seals the same states run after run. The nonce is also the state's
// identity for the single-use mode (usedStates).

type sealedState struct {
	Method  string            `json:"m"`
	Target  string            `json:"t"`
	Digest  string            `json:"d"`
	Subject string            `json:"p,omitempty"`
	Expiry  int64             `json:"e"`
	Round   int               `json:"r"`
	Keys    map[string]string `json:"k,omitempty"`
	State   []byte            `json:"s,omitempty"`
	Seq     uint64            `json:"n,omitempty"` // makes each state of a process distinct
}

const stateNonceSize = 12 // the standard GCM nonce

var stateEncoding = base64.RawURLEncoding.Strict()

// argsDigest is the digest of a request's arguments that a state is bound
// to: SHA-256 of their canonical JSON (member order and spacing do not
// matter).
func argsDigest(args jsontext.Value) string {
	if len(args) == 0 {
		args = jsontext.Value("{}")
	}
	c := args.Clone()
	if err := c.Canonicalize(); err != nil {
		c = args
	}
	sum := sha256.Sum256(c)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// sealState sets the expiry of st and returns it sealed with the current
// key of the ring.
func (s *Server) sealState(st *sealedState) string {
	if s.states.random {
		s.states.warned.Do(func() {
			s.log.Warn("mcp: no requestState key set: using a random key for this process only, so replicas will refuse each other's input-required states; set ServerOptions.StateKey (or StateKeys) to the same secret on every replica",
				"keyId", s.states.current.id)
		})
	}
	st.Expiry = s.opts.Now().Add(s.opts.StateTTL).Unix()
	st.Seq = s.states.seq.Add(1)
	body, err := json.Marshal(st, json.Deterministic(true))
	if err != nil { // cannot happen: plain types
		return ""
	}
	k := s.states.current
	m := hmac.New(sha256.New, k.nonceKey)
	m.Write(k.ad)
	m.Write(body)
	buf := make([]byte, 0, sha256.Size+len(body)+k.aead.Overhead())
	buf = m.Sum(buf)[:stateNonceSize]
	sealed := k.aead.Seal(buf, buf, body, k.ad)
	return k.id + "." + stateEncoding.EncodeToString(sealed)
}

// stateRefusal is why a requestState is refused; its value is the
// reason that is logged.
type stateRefusal string

const (
	refusedIntegrity    stateRefusal = "integrity"
	refusedUnknownKey   stateRefusal = "unknown key id"
	refusedOtherRequest stateRefusal = "other request"
	refusedOtherCaller  stateRefusal = "other caller"
	refusedExpired      stateRefusal = "expired"
	refusedReplayed     stateRefusal = "replayed"
	refusedTooManyUsed  stateRefusal = "too many used states"
)

// openState verifies a requestState against the request it came back
// with; it returns the state, or the -32602 error that refuses it. Every
// refusal is logged with its reason (refuseState). In single-use mode a
// state that verifies is used up.
func (s *Server) openState(wire, method, target, digest, subject string) (*sealedState, *Error) {
	r := s.states
	kid, payload, ok := strings.Cut(wire, ".")
	if !ok {
		return s.refuseState(refusedIntegrity, wire, "", method, target, 0)
	}
	k := r.keys[kid]
	if k == nil {
		return s.refuseState(refusedUnknownKey, wire, kid, method, target, 0)
	}
	// The decoder skips line breaks; a state has none.
	if strings.ContainsAny(payload, "\r\n") {
		return s.refuseState(refusedIntegrity, wire, kid, method, target, 0)
	}
	raw, err := stateEncoding.DecodeString(payload)
	if err != nil || len(raw) < stateNonceSize+k.aead.Overhead() {
		return s.refuseState(refusedIntegrity, wire, kid, method, target, 0)
	}
	nonce := raw[:stateNonceSize]
	body, err := k.aead.Open(nil, nonce, raw[stateNonceSize:], k.ad)
	if err != nil {
		return s.refuseState(refusedIntegrity, wire, kid, method, target, 0)
	}
	st := new(sealedState)
	if json.Unmarshal(body, st) != nil { // only if the secret sealed something else
		return s.refuseState(refusedIntegrity, wire, kid, method, target, 0)
	}
	now := s.opts.Now().Unix()
	switch {
	case st.Method != method || st.Target != target || st.Digest != digest:
		return s.refuseState(refusedOtherRequest, wire, kid, method, target, 0)
	case st.Subject != subject:
		return s.refuseState(refusedOtherCaller, wire, kid, method, target, 0)
	case now > st.Expiry:
		return s.refuseState(refusedExpired, wire, kid, method, target, st.Expiry)
	}
	if r.used != nil {
		if why := r.used.use([stateNonceSize]byte(nonce), st.Expiry, now); why != "" {
			return s.refuseState(why, wire, kid, method, target, st.Expiry)
		}
	} else if s.opts.StateSingleUse && s.opts.UsedStates != nil { // shared by replicas (rev2026_state_shared.go)
		if why := s.useShared(nonce, st.Expiry); why != "" {
			return s.refuseState(why, wire, kid, method, target, st.Expiry)
		}
	}
	return st, nil
}

// refuseState logs the refusal of a requestState (its reason, the key id
// if it is one of the ring, and the first characters of the state: never
// the whole state or a secret) and returns the -32602 error the client
// gets. The client is not told whether a key id exists.
func (s *Server) refuseState(why stateRefusal, wire, kid, method, target string, expiry int64) (*sealedState, *Error) {
	msg := "failed its integrity check"
	var data any
	level := slog.LevelWarn
	switch why {
	case refusedOtherRequest:
		msg = "was issued for another request"
	case refusedOtherCaller:
		msg = "was issued to another caller"
	case refusedExpired:
		msg, level = "has expired", slog.LevelInfo
	case refusedReplayed:
		msg = "was used already (each requestState is accepted once)"
	case refusedUsedStore:
		msg = "cannot be accepted now: the server could not record it as used; try again later"
	case refusedTooManyUsed:
		max := s.opts.MaxUsedStates
		msg = "cannot be accepted now: the server remembers MaxUsedStates (" + strconv.Itoa(max) + ") used states already; try again later"
		data = usedStatesData{Limit: "MaxUsedStates", MaxUsedStates: max}
	}
	if n, ok := s.states.logs.take(s.opts.Now()); ok {
		attrs := []any{slog.String("reason", string(why)), slog.String("method", method), logclip.Attr("target", target),
			slog.String("state", statePrefix(wire))}
		if kid != "" && validStateKeyID(kid) {
			attrs = append(attrs, slog.String("keyId", kid))
		}
		if expiry != 0 {
			attrs = append(attrs, slog.Time("expiry", time.Unix(expiry, 0)))
		}
		if n > 0 {
			attrs = append(attrs, slog.Int("suppressed", n))
		}
		if why == refusedIntegrity || why == refusedUnknownKey {
			attrs = append(attrs, s.states.hint()...)
		}
		s.log.Log(context.Background(), level, "mcp: requestState refused", attrs...)
	}
	return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: requestState " + msg, Data: data}
}

// usedStatesData is the data of the -32602 refusal of a requestState
// while MaxUsedStates used states are remembered; the responder fills in
// the request's correlationId, as in every protocol error.
type usedStatesData struct {
	Limit         string `json:"limit"`
	MaxUsedStates int    `json:"maxUsedStates"`
	CorrelationID string `json:"correlationId"`
}

func (d usedStatesData) correlatedWith(id func() string) any {
	if d.CorrelationID != "" {
		return nil
	}
	d.CorrelationID = id()
	return d
}

// statePrefix is what a log line shows of a state: its first 12
// characters (the key id and a little more), URL-safe ones only.
func statePrefix(wire string) string {
	const n = 12
	b := make([]byte, 0, n+3)
	for i := 0; i < len(wire) && i < n; i++ {
		c := wire[i]
		if !keyIDChar(c) && c != '.' {
			c = '?'
		}
		b = append(b, c)
	}
	if len(wire) > n {
		b = append(b, "..."...)
	}
	return string(b)
}

// usedStates remembers the states used in single-use mode until they
// expire: at most max of them. When it is full of unexpired states, it
// refuses new ones rather than forget one that could then be replayed.
type usedStates struct {
	mu    sync.Mutex
	max   int
	ids   map[[stateNonceSize]byte]struct{}
	order expiryHeap
}

func newUsedStates(max int) *usedStates {
	return &usedStates{max: max, ids: make(map[[stateNonceSize]byte]struct{})}
}

// use records the state id (valid until expiry, Unix seconds) as used at
// now; it returns why it cannot ("" when recorded).
func (u *usedStates) use(id [stateNonceSize]byte, expiry, now int64) stateRefusal {
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.order) > 0 && u.order[0].expiry < now {
		delete(u.ids, heap.Pop(&u.order).(usedState).id)
	}
	if _, used := u.ids[id]; used {
		return refusedReplayed
	}
	if len(u.ids) >= u.max {
		return refusedTooManyUsed
	}
	u.ids[id] = struct{}{}
	heap.Push(&u.order, usedState{id: id, expiry: expiry})
	return ""
}

func (u *usedStates) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.ids)
}

type usedState struct {
	id     [stateNonceSize]byte
	expiry int64
}

// expiryHeap orders used states by expiry, the soonest first.
type expiryHeap []usedState

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expiry < h[j].expiry }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(usedState)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// maxRefusalLogsPerSecond bounds the log lines of refused states: a peer
// sending forged states cannot flood the log. The lines left out are
// counted in the next line ("suppressed").
const maxRefusalLogsPerSecond = 20

// logBudget lets through at most maxRefusalLogsPerSecond lines per second
// of the clock.
type logBudget struct {
	mu         sync.Mutex
	second     int64
	lines      int
	suppressed int
}

// take reports whether a line may be logged at now, and how many were
// suppressed before it.
func (b *logBudget) take(now time.Time) (suppressed int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sec := now.Unix(); sec != b.second {
		b.second, b.lines = sec, 0
	}
	if b.lines >= maxRefusalLogsPerSecond {
		b.suppressed++
		return 0, false
	}
	b.lines++
	suppressed, b.suppressed = b.suppressed, 0
	return suppressed, true
}
