package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DefaultMaxStateBytes is the default bound of an agent's encoded state
// (tools.maxStateBytes of the configuration, 256 KiB).
const DefaultMaxStateBytes = 262144

// State is an agent's state as its handler sees it: a JSON object whose
// members the handler reads and changes. Values are stored as their JSON
// encoding, taken when Set is called, so later changes to a value given to
// Set do not reach the state, and every Get returns a fresh copy: state is
// never shared with anyone. Get returns values decoded into Go's generic
// JSON types (map[string]any, []any, string, float64, bool, nil); Decode
// reads a member into a typed value.
//
// Changes are the handler's own until it returns: the Coordinator commits
// them when the handler succeeds and the encoded state — the compact JSON
// object of all members — stays within MaxStateBytes, and discards them
// otherwise. A State is safe for concurrent use, and becomes unusable
// (ErrStateClosed, empty reads) when its handler returns.
type State struct {
	mu      sync.Mutex
	base    map[string]jsontext.Value // committed state; read-only here
	baseLen int                       // encoded size of base's members (see stateSize)
	changes map[string]jsontext.Value // nil value: deleted
	closed  bool
}

// committed is an agent's committed state and the bookkeeping of its
// encoded size. It is owned by the agent (guarded by its mutex for readers
// other than the agent's running handler).
type committed struct {
	members map[string]jsontext.Value
	// membersLen is the sum of memberLen over members.
	membersLen int
}

// memberLen is the encoded length of one member: "key":value.
func memberLen(key string, raw jsontext.Value) int {
	return quotedLen(key) + 1 + len(raw)
}

// quotedLen is the length of key (valid UTF-8) as a JSON string, as the
// wire encoder writes it: '"', '\\' and the control characters \b \f \n \r
// \t take two bytes, other control characters six (\u00XX), everything
// else itself. (jsontext.AppendQuote says the same, but costs a stack copy
// in a young goroutine.)
func quotedLen(key string) int {
	n := 2 + len(key)
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	return n
}

// encodedSize is the size of the compact JSON object with n members whose
// memberLen values sum to membersLen: braces plus commas.
func encodedSize(n, membersLen int) int {
	if n == 0 {
		return 2
	}
	return 2 + membersLen + n - 1
}

// size returns the encoded size of the committed state.
func (c *committed) size() int { return encodedSize(len(c.members), c.membersLen) }

// measure computes the result of changes on c. It reports whether anything
// differs and the new size; commit applies it.
func (c *committed) measure(changes map[string]jsontext.Value) (changed bool, n, membersLen int) {
	n, membersLen = len(c.members), c.membersLen
	for k, v := range changes {
		old, had := c.members[k]
		if had {
			if v != nil && bytes.Equal(old, v) {
				continue
			}
			n--
			membersLen -= memberLen(k, old)
		}
		if v != nil {
			n++
			membersLen += memberLen(k, v)
		} else if !had {
			continue
		}
		changed = true
	}
	return changed, n, membersLen
}

// commit applies changes measured as membersLen.
func (c *committed) commit(changes map[string]jsontext.Value, membersLen int) {
	for k, v := range changes {
		if v == nil {
			delete(c.members, k)
		} else {
			c.members[k] = v
		}
	}
	c.membersLen = membersLen
}

// snapshot returns the members in a new map (the values are immutable).
func (c *committed) snapshot() map[string]jsontext.Value { return maps.Clone(c.members) }

// decodeState decodes raw members into a new map of generic JSON values.
func decodeState(members map[string]jsontext.Value) map[string]any {
	out := make(map[string]any, len(members))
	for k, raw := range members {
		out[k] = decodeValue(raw)
	}
	return out
}

func decodeValue(raw jsontext.Value) any {
	var v any
	if err := jsonv2.Unmarshal(raw, &v); err != nil { // cannot happen: raw came from Marshal
		return nil
	}
	return v
}

func newState(c *committed) *State {
	return &State{base: c.members, baseLen: c.membersLen}
}

// lookup returns the current raw value of key; s.mu must be held.
func (s *State) lookup(key string) (jsontext.Value, bool) {
	if s.closed {
		return nil, false
	}
	if v, ok := s.changes[key]; ok {
		return v, v != nil
	}
	v, ok := s.base[key]
	return v, ok
}

// Get returns a copy of the value of key, decoded into generic JSON types
// (numbers are float64), and whether the key is set.
func (s *State) Get(key string) (any, bool) {
	s.mu.Lock()
	raw, ok := s.lookup(key)
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	return decodeValue(raw), true
}

// Decode decodes the value of key into v (a pointer) and reports whether
// the key is set; v is left unchanged when it is not.
func (s *State) Decode(key string, v any) (bool, error) {
	s.mu.Lock()
	raw, ok := s.lookup(key)
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	return true, jsonv2.Unmarshal(raw, v)
}

// Raw returns a copy of the JSON encoding of the value of key.
func (s *State) Raw(key string) (json.RawMessage, bool) {
	s.mu.Lock()
	raw, ok := s.lookup(key)
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	return json.RawMessage(raw.Clone()), true
}

// Set sets key to the JSON encoding of value (a json.RawMessage is taken as
// raw JSON). It fails, changing nothing, when the value cannot be encoded,
// the key is not valid UTF-8, or the handler has returned (ErrStateClosed).
// The MaxStateBytes bound is checked when the handler returns, not here;
// Size reports the size so far.
func (s *State) Set(key string, value any) error {
	if !utf8.ValidString(key) {
		return fmt.Errorf("agents: state key %q is not valid UTF-8", key)
	}
	raw, err := jsonv2.Marshal(value)
	if err != nil {
		return fmt.Errorf("agents: state value of %q cannot be encoded as JSON: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStateClosed
	}
	if s.changes == nil {
		s.changes = make(map[string]jsontext.Value, 4)
	}
	s.changes[key] = jsontext.Value(raw)
	return nil
}

// Delete removes key and reports whether it was set.
func (s *State) Delete(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.lookup(key); !ok {
		return false
	}
	if s.changes == nil {
		s.changes = make(map[string]jsontext.Value, 4)
	}
	s.changes[key] = nil
	return true
}

// Keys returns the keys that are set, sorted.
func (s *State) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	keys := make([]string, 0, len(s.base)+len(s.changes))
	for k := range s.base {
		if v, ok := s.changes[k]; !ok || v != nil {
			keys = append(keys, k)
		}
	}
	for k, v := range s.changes {
		if _, ok := s.base[k]; !ok && v != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Len returns the number of keys that are set.
func (s *State) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	c := committed{members: s.base, membersLen: s.baseLen}
	_, n, _ := c.measure(s.changes)
	return n
}

// Size returns the size in bytes of the state's compact JSON encoding,
// changes included: the number checked against MaxStateBytes.
func (s *State) Size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	c := committed{members: s.base, membersLen: s.baseLen}
	_, n, l := c.measure(s.changes)
	return encodedSize(n, l)
}

// Snapshot returns a copy of the whole state, changes included, decoded
// into generic JSON types.
func (s *State) Snapshot() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return map[string]any{}
	}
	out := make(map[string]any, len(s.base)+len(s.changes))
	for k, raw := range s.base {
		if _, ok := s.changes[k]; !ok {
			out[k] = decodeValue(raw)
		}
	}
	for k, raw := range s.changes {
		if raw != nil {
			out[k] = decodeValue(raw)
		}
	}
	return out
}

// close ends the handler's use of s and returns its changes.
func (s *State) close() map[string]jsontext.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	ch := s.changes
	s.changes, s.base = nil, nil
	return ch
}
