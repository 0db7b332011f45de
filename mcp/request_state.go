package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The requestState of an input-required result is
//
//	base64url(JSON sealedState) "." base64url(HMAC-SHA-256(StateKey, first part))
//
// The state binds the method, the tool, prompt or resource it was issued
// for, a digest of the request's arguments, the caller (the bearer token's
// subject, if any), the methods of the input requests by key, the round
// and an expiry. Only a state this server (or a replica holding the same
// key) issued for the very same request verifies.

type sealedState struct {
	Method  string            `json:"m"`
	Target  string            `json:"t"`
	Digest  string            `json:"d"`
	Subject string            `json:"p,omitempty"`
	Expiry  int64             `json:"e"`
	Round   int               `json:"r"`
	Keys    map[string]string `json:"k,omitempty"`
	State   []byte            `json:"s,omitempty"`
}

func newStateKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

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

func (s *Server) sealState(st *sealedState) string {
	st.Expiry = s.opts.Now().Add(s.opts.StateTTL).Unix()
	body, err := json.Marshal(st, json.Deterministic(true))
	if err != nil { // cannot happen: plain types
		return ""
	}
	b := base64.RawURLEncoding.EncodeToString(body)
	return b + "." + s.stateMAC(b)
}

func (s *Server) stateMAC(b string) string {
	m := hmac.New(sha256.New, s.opts.StateKey)
	m.Write([]byte(b))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openState verifies a requestState against the request it came back
// with; it returns the state, or the -32602 error that refuses it.
func (s *Server) openState(wire, method, target, digest, subject string) (*sealedState, *Error) {
	bad := func(why string) (*sealedState, *Error) {
		return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: requestState " + why}
	}
	b, mac, ok := strings.Cut(wire, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.stateMAC(b))) {
		return bad("failed its integrity check")
	}
	body, err := base64.RawURLEncoding.DecodeString(b)
	if err != nil {
		return bad("failed its integrity check")
	}
	st := new(sealedState)
	if json.Unmarshal(body, st) != nil {
		return bad("failed its integrity check")
	}
	switch {
	case st.Method != method || st.Target != target || st.Digest != digest:
		return bad("was issued for another request")
	case st.Subject != subject:
		return bad("was issued to another caller")
	case s.opts.Now().Unix() > st.Expiry:
		return bad("has expired")
	}
	return st, nil
}
