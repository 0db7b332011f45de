package aacp

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// MessageType says what an envelope carries: REQUEST, RESPONSE or EVENT.
type MessageType string

// Message types.
const (
	// MessageRequest asks the target agent for a result; the target answers
	// with a MessageResponse carrying the same requestId.
	MessageRequest MessageType = "REQUEST"
	// MessageResponse carries the outcome of a request back to its source.
	MessageResponse MessageType = "RESPONSE"
	// MessageEvent is a one-way message: the target processes it once and
	// answers nothing.
	MessageEvent MessageType = "EVENT"
)

// Valid reports whether t is one of the three message types.
func (t MessageType) Valid() bool {
	return t == MessageRequest || t == MessageResponse || t == MessageEvent
}

// Limits of DecodeEnvelope.
const (
	// MaxEnvelopeBytes bounds the encoded size of an envelope.
	MaxEnvelopeBytes = 4 << 20
	// MaxEnvelopeDepth bounds the nesting depth of an encoded envelope
	// (the envelope object itself is depth 1).
	MaxEnvelopeDepth = 64
	// MaxAgentIDBytes bounds the length of an agent id.
	MaxAgentIDBytes = 255
	// MaxPayloadBytes bounds the payload of a message (and the result or
	// error a RESPONSE carries): MaxEnvelopeBytes less room for the other
	// members of the envelope at their largest. A send with a larger
	// payload fails at once with ErrPayloadTooLarge; nothing is stored.
	MaxPayloadBytes = MaxEnvelopeBytes - envelopeOverheadBytes
	// envelopeOverheadBytes bounds the members other than the payload:
	// names and punctuation, two UUIDs, two agent ids escaped at worst
	// (twice their length), seq, ack, type and timestamp.
	envelopeOverheadBytes = 4 << 10
)

// ErrPayloadTooLarge is matched by the error of a send whose payload is
// larger than MaxPayloadBytes, and of EncodeEnvelope and DecodeEnvelope for
// an envelope larger than MaxEnvelopeBytes.
var ErrPayloadTooLarge = errors.New("aacp: payload too large")

// checkSize is the one check of the size bounds: an encoded envelope of n
// bytes (what) against MaxEnvelopeBytes, a payload against
// MaxPayloadBytes.
func checkSize(what string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("%w: %s of %d bytes is larger than %d bytes", ErrPayloadTooLarge, what, n, limit)
	}
	return nil
}

// Envelope is one AACP message. Every field but
// RequestID and Ack is required on the wire.
//
// MessageID is new for every message; RequestID stays the same across every
// message that belongs to one logical request (the REQUEST, its RESPONSE,
// and any later REQUEST that retries it). Seq numbers the messages of one
// source→target pair from 1 upwards; Ack acknowledges, cumulatively, the
// messages of the opposite direction (target→source) received so far.
type Envelope struct {
	MessageID     string          `json:"messageId"`
	RequestID     string          `json:"requestId,omitempty"`
	SourceAgentID string          `json:"sourceAgentId"`
	TargetAgentID string          `json:"targetAgentId"`
	Seq           uint64          `json:"seq"`
	Ack           uint64          `json:"ack,omitzero"`
	MessageType   MessageType     `json:"messageType"`
	Timestamp     time.Time       `json:"timestamp"`
	Payload       json.RawMessage `json:"payload"`
}

// Decode decodes the payload into v (a pointer) with the strict options of
// the envelope codec.
func (e *Envelope) Decode(v any) error {
	return jsonv2.Unmarshal(e.Payload, v, strictOptions)
}

// ErrInvalidEnvelope is matched by every error of EncodeEnvelope,
// DecodeEnvelope and Envelope.Validate.
var ErrInvalidEnvelope = errors.New("aacp: invalid envelope")

// EnvelopeError says why an envelope was rejected. It matches
// ErrInvalidEnvelope with errors.Is.
type EnvelopeError struct {
	// Field is the JSON member at fault ("" for the envelope as a whole).
	Field string
	// Reason describes the problem.
	Reason string

	err error // the cause, if any (ErrPayloadTooLarge)
}

// Error implements error.
func (e *EnvelopeError) Error() string {
	if e.Field == "" {
		return "aacp: invalid envelope: " + e.Reason
	}
	return "aacp: invalid envelope: " + e.Field + ": " + e.Reason
}

// Is reports whether target is ErrInvalidEnvelope.
func (e *EnvelopeError) Is(target error) bool { return target == ErrInvalidEnvelope }

// Unwrap returns the cause of the rejection, if any (an envelope too large
// matches ErrPayloadTooLarge).
func (e *EnvelopeError) Unwrap() error { return e.err }

func envErr(field, reason string) error { return &EnvelopeError{Field: field, Reason: reason} }

// strictOptions are the decode options of the codec: unknown members are
// rejected; json v2 already matches names case-sensitively, rejects
// duplicate names and invalid UTF-8.
var strictOptions = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// Validate checks the invariants an envelope must satisfy before it is
// encoded or after it was decoded: messageId a UUID v4; requestId a UUID v4,
// required for REQUEST and RESPONSE; agent ids non-empty, at most
// MaxAgentIDBytes, without control characters; seq at least 1; a known
// messageType; a timestamp; a payload that is valid JSON.
func (e *Envelope) Validate() error {
	if !IsUUIDv4(e.MessageID) {
		return envErr("messageId", "not a UUID v4")
	}
	switch {
	case e.RequestID != "":
		if !IsUUIDv4(e.RequestID) {
			return envErr("requestId", "not a UUID v4")
		}
	case e.MessageType == MessageRequest || e.MessageType == MessageResponse:
		return envErr("requestId", "required for "+string(e.MessageType))
	}
	if err := checkAgentID(e.SourceAgentID); err != "" {
		return envErr("sourceAgentId", err)
	}
	if err := checkAgentID(e.TargetAgentID); err != "" {
		return envErr("targetAgentId", err)
	}
	if e.Seq == 0 {
		return envErr("seq", "must be at least 1")
	}
	if !e.MessageType.Valid() {
		return envErr("messageType", fmt.Sprintf("%q is not REQUEST, RESPONSE or EVENT", string(e.MessageType)))
	}
	if e.Timestamp.IsZero() {
		return envErr("timestamp", "missing")
	}
	if len(e.Payload) == 0 {
		return envErr("payload", "missing")
	}
	return nil
}

func checkAgentID(id string) string {
	switch {
	case id == "":
		return "missing"
	case len(id) > MaxAgentIDBytes:
		return fmt.Sprintf("longer than %d bytes", MaxAgentIDBytes)
	case !utf8.ValidString(id):
		return "invalid UTF-8"
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return "contains a control character"
		}
	}
	return ""
}

// EncodeEnvelope validates env and returns its JSON encoding (members in
// declaration order, timestamp in RFC 3339 UTC).
func EncodeEnvelope(env *Envelope) ([]byte, error) {
	if err := env.Validate(); err != nil {
		return nil, err
	}
	if !jsontext.Value(env.Payload).IsValid() {
		return nil, envErr("payload", "not valid JSON")
	}
	w := *env
	w.Timestamp = w.Timestamp.UTC()
	b, err := jsonv2.Marshal(&w, jsonv2.Deterministic(true))
	if err != nil {
		return nil, envErr("", err.Error())
	}
	if err := checkSize("envelope", len(b), MaxEnvelopeBytes); err != nil {
		return nil, &EnvelopeError{Reason: err.Error(), err: err}
	}
	return b, nil
}

// DecodeEnvelope decodes one encoded envelope strictly: at most
// MaxEnvelopeBytes and MaxEnvelopeDepth, member names matched
// case-sensitively, duplicate or unknown members rejected, invalid UTF-8
// rejected, then Validate. The payload is copied: the result does not alias
// data.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	if err := checkSize("envelope", len(data), MaxEnvelopeBytes); err != nil {
		return nil, &EnvelopeError{Reason: err.Error(), err: err}
	}
	if derr := jsonrpc.CheckDepth(data, MaxEnvelopeDepth); derr != nil {
		return nil, envErr("", fmt.Sprintf("nesting deeper than %d", MaxEnvelopeDepth))
	}
	var env Envelope
	if err := jsonv2.Unmarshal(data, &env, strictOptions); err != nil {
		return nil, envErr(decodeField(err), decodeReason(err))
	}
	if len(env.Payload) == 0 {
		return nil, envErr("payload", "missing")
	}
	env.Timestamp = env.Timestamp.UTC()
	if err := env.Validate(); err != nil {
		return nil, err
	}
	return &env, nil
}

func decodeField(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.JSONPointer != "" {
		return string(se.JSONPointer)[1:]
	}
	return ""
}

// decodeReason describes a decoding error in stable words (the decoder's
// own messages vary on purpose from process to process).
func decodeReason(err error) string {
	switch {
	case errors.Is(err, jsonv2.ErrUnknownName):
		return "unknown member"
	case errors.Is(err, jsontext.ErrDuplicateName):
		return "duplicate member name"
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return "malformed JSON or invalid UTF-8"
	}
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.GoType != nil {
		switch se.GoType.Kind() {
		case reflect.String:
			return "must be a string"
		case reflect.Uint64:
			return "must be a non-negative integer"
		case reflect.Struct:
			if se.GoType == reflect.TypeFor[time.Time]() {
				return "must be an RFC 3339 timestamp"
			}
			return "must be an object"
		}
	}
	return "invalid value"
}

// IsUUIDv4 reports whether s is a UUID of version 4 and the RFC 4122
// variant in the canonical 8-4-4-4-12 hexadecimal form.
func IsUUIDv4(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	if s[14] != '4' {
		return false
	}
	switch s[19] {
	case '8', '9', 'a', 'b', 'A', 'B':
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
