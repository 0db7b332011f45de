package mcp

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// MinStateKeyBytes is the shortest requestState secret a Server accepts
// (ServerOptions.StateKey, StateKeys[i].Secret): 32 bytes, the size of the
// AES-256 key derived from it. Use random bytes (crypto/rand, or the
// output of `openssl rand -base64 32`), never a password.
const MinStateKeyBytes = 32

// DefaultStateKeyID is the key id of ServerOptions.StateKey: setting
// StateKey is the same as setting StateKeys to
// []StateKey{{ID: DefaultStateKeyID, Secret: StateKey}}. Keep this id for
// the old secret when moving from StateKey to a ring, so that the states
// it sealed still verify.
const DefaultStateKeyID = "default"

// defaultMaxUsedStates is the default of ServerOptions.MaxUsedStates.
const defaultMaxUsedStates = 100_000

// maxStateKeyID bounds the length of a key id.
const maxStateKeyID = 64

// StateKey is one key of the ring that seals the requestState of
// input-required results (ServerOptions.StateKeys).
type StateKey struct {
	// ID names the key. Every state carries, in clear, the id of the key
	// that sealed it, and is verified with the key of that id only. 1 to
	// 64 characters from A-Z, a-z, 0-9, "-" and "_", unique in the ring;
	// not secret (a date such as "2026-08" works well).
	ID string
	// Secret is the key material: at least MinStateKeyBytes random bytes,
	// the same on every replica. The AES-256-GCM key of the id is derived
	// from it with HKDF-SHA-256, so a secret is never used directly.
	Secret []byte
}

// OptionError reports a ServerOptions field whose value is invalid or
// unsafe. ServerOptions.Validate returns it; NewServer panics with it.
// Match it with errors.As.
type OptionError struct {
	// Option is the field, as it is written in Go: "StateKey",
	// "StateKeys[1].Secret".
	Option string
	// Problem says what is wrong and what to set instead.
	Problem string
}

// Error implements error.
func (e *OptionError) Error() string {
	return "mcp: ServerOptions." + e.Option + ": " + e.Problem
}

// Validate reports the first unsafe or invalid setting of o as an
// *OptionError; nil options are valid (they mean the defaults). It checks
// that MaxInFlight is not negative, that Registry serves at least one
// feature and that no feature field names another catalog than Registry
// (see Registry), and the requestState keys: StateKey, if not nil, must
// be at least
// MinStateKeyBytes long (an empty key, as an unset environment variable
// gives, is refused rather than used); StateKeys, if not nil, must hold at
// least one key, each with a valid, unique ID and a Secret of at least
// MinStateKeyBytes; StateKey and StateKeys cannot both be set. NewServer
// panics with the error of Validate, so call Validate first to handle it.
func (o *ServerOptions) Validate() error {
	if o == nil {
		return nil
	}
	if o.MaxInFlight < 0 {
		return &OptionError{Option: "MaxInFlight", Problem: fmt.Sprintf("MaxInFlight is %d; set a positive bound on the requests of one connection served at once, or 0 for the default (%d)", o.MaxInFlight, defaultMaxInFlight)}
	}
	if _, err := o.registryFeatures(); err != nil {
		return err
	}
	for i, name := range o.InputMethods {
		if _, ok := o.Methods[name]; !ok {
			return &OptionError{Option: fmt.Sprintf("InputMethods[%d]", i), Problem: fmt.Sprintf("%q is not in Methods; InputMethods names custom methods that declare input rounds", name)}
		}
	}
	if o.StateKey != nil && o.StateKeys != nil {
		return &OptionError{Option: "StateKey", Problem: "StateKey and StateKeys are both set; set StateKey for a single key, or StateKeys for a ring of keys (rotation), not both"}
	}
	if o.StateKey != nil {
		if p := secretProblem("StateKey", o.StateKey); p != "" {
			return &OptionError{Option: "StateKey", Problem: p}
		}
		return nil
	}
	if o.StateKeys == nil {
		return nil
	}
	if len(o.StateKeys) == 0 {
		return &OptionError{Option: "StateKeys", Problem: "StateKeys is empty; list at least one key (the first seals new states), or leave it nil for a random key per process"}
	}
	seen := make(map[string]int, len(o.StateKeys))
	for i, k := range o.StateKeys {
		name := fmt.Sprintf("StateKeys[%d]", i)
		if !validStateKeyID(k.ID) {
			return &OptionError{Option: name + ".ID", Problem: fmt.Sprintf(`key id %q is invalid; set 1 to %d characters from A-Z, a-z, 0-9, "-" and "_"`, k.ID, maxStateKeyID)}
		}
		if j, dup := seen[k.ID]; dup {
			return &OptionError{Option: name + ".ID", Problem: fmt.Sprintf("key id %q is also the id of StateKeys[%d]; key ids must be unique", k.ID, j)}
		}
		seen[k.ID] = i
		if p := secretProblem(name+".Secret", k.Secret); p != "" {
			return &OptionError{Option: name + ".Secret", Problem: p}
		}
	}
	return nil
}

func secretProblem(name string, secret []byte) string {
	const set = "set it to at least %d random bytes shared by every replica (e.g. from `openssl rand -base64 32`)"
	switch {
	case len(secret) == 0:
		return fmt.Sprintf("%s is empty (an unset environment variable?); "+set+", or leave StateKey and StateKeys nil for a random key per process", name, MinStateKeyBytes)
	case len(secret) < MinStateKeyBytes:
		return fmt.Sprintf("%s is %d bytes, too short to be safe; "+set, name, len(secret), MinStateKeyBytes)
	}
	return ""
}

func validStateKeyID(id string) bool {
	if id == "" || len(id) > maxStateKeyID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !keyIDChar(id[i]) {
			return false
		}
	}
	return true
}

func keyIDChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// ringKey is one key of the ring, ready to seal and open.
type ringKey struct {
	id       string
	aead     cipher.AEAD
	nonceKey []byte // the HMAC key of synthetic nonces (rev2026_state.go)
	ad       []byte // associated data: the format and the key id
}

const stateFormat = "keel requestState v1"

func newRingKey(k StateKey) *ringKey {
	dk, err := hkdf.Key(sha256.New, k.Secret, nil, stateFormat+" AES-256-GCM key "+k.ID, 32)
	if err != nil { // cannot happen: 32 bytes of SHA-256 output
		panic("mcp: deriving the requestState key: " + err.Error())
	}
	nk, err := hkdf.Key(sha256.New, k.Secret, nil, stateFormat+" nonce key "+k.ID, 32)
	if err != nil {
		panic("mcp: deriving the requestState key: " + err.Error())
	}
	block, err := aes.NewCipher(dk)
	if err != nil { // cannot happen: 32 bytes make an AES-256 key
		panic("mcp: requestState key: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("mcp: requestState key: " + err.Error())
	}
	return &ringKey{id: k.ID, aead: aead, nonceKey: nk, ad: []byte(stateFormat + "\x00" + k.ID)}
}

// stateRing holds what seals and opens requestStates: the keys, the set
// of used states (single-use mode) and the budget of refusal log lines.
type stateRing struct {
	current *ringKey
	keys    map[string]*ringKey
	random  bool          // the key is a random one of this process
	warned  sync.Once     // the warning that replicas will not share states (on the first seal)
	seq     atomic.Uint64 // numbers the states sealed (sealedState.Seq)
	used    *usedStates   // nil unless ServerOptions.StateSingleUse
	logs    logBudget
}

// newStateRing builds the ring of o (validated, with its Logger set) and
// leaves the effective ring in o.StateKeys (copied; StateKey is folded
// into it). Without any key it makes a random one; the first state sealed
// with it logs a warning that replicas will not share states.
func newStateRing(o *ServerOptions) *stateRing {
	keys := o.StateKeys
	switch {
	case o.StateKey != nil:
		keys = []StateKey{{ID: DefaultStateKeyID, Secret: o.StateKey}}
	case keys == nil:
		secret, id := make([]byte, MinStateKeyBytes), make([]byte, 4)
		_, _ = rand.Read(secret) // crypto/rand never fails
		_, _ = rand.Read(id)
		keys = []StateKey{{ID: "random-" + hex.EncodeToString(id), Secret: secret}}
	}
	r := &stateRing{keys: make(map[string]*ringKey, len(keys)), random: o.StateKey == nil && o.StateKeys == nil}
	ring := make([]StateKey, len(keys))
	for i, k := range keys {
		ring[i] = StateKey{ID: k.ID, Secret: append([]byte(nil), k.Secret...)}
		rk := newRingKey(ring[i])
		r.keys[k.ID] = rk
		if i == 0 {
			r.current = rk
		}
	}
	o.StateKey, o.StateKeys = nil, ring
	if o.UsedStates != nil {
		// Replicas sharing their single-use memory number their states
		// from a random start each, so that they never seal two different
		// requests' states alike (one would read as the other's replay).
		var start [8]byte
		_, _ = rand.Read(start[:]) // crypto/rand never fails
		r.seq.Store(binary.BigEndian.Uint64(start[:]))
	}
	if o.StateSingleUse && o.UsedStates == nil {
		r.used = newUsedStates(o.MaxUsedStates)
	}
	return r
}

// hint returns the attribute that a log line of a state refused for its
// integrity or key id adds when this process runs on a random key.
func (r *stateRing) hint() []any {
	if !r.random {
		return nil
	}
	return []any{slog.String("hint", "this process uses a random requestState key; set ServerOptions.StateKey (or StateKeys) to the same secret on every replica")}
}
