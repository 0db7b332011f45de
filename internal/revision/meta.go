package revision

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// The _meta keys of the per-request revisions.
const (
	// MetaProtocolVersion (request _meta, required) is the revision of the request.
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	// MetaClientCapabilities (request _meta, required) is the client's
	// capabilities for this request ({} = none).
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// MetaClientInfo (request _meta, optional) names the client software.
	MetaClientInfo = "io.modelcontextprotocol/clientInfo"
	// MetaLogLevel (request _meta, optional) opts the request in to
	// notifications/message at or above this level.
	MetaLogLevel = "io.modelcontextprotocol/logLevel"
	// MetaServerInfo (result _meta) names the server.
	MetaServerInfo = "io.modelcontextprotocol/serverInfo"
	// MetaSubscriptionID (notification and result _meta) is the JSON-RPC
	// id of the subscriptions/listen request a message belongs to.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// codeInvalidParams is JSON-RPC's -32602.
const codeInvalidParams = -32602

// Refusal is the protocol error a rule of a revision answers: its JSON-RPC
// code and message.
type Refusal struct {
	Code    int64
	Message string
}

// NoParams refuses a per-request revision's request without params (or
// with params that are not an object).
var NoParams = &Refusal{Code: codeInvalidParams, Message: "Invalid params: a " + V20260728 + " request needs params with _meta"}

// MissingMeta refuses a request whose required _meta member key is absent
// or malformed.
func MissingMeta(key string) *Refusal {
	return &Refusal{Code: codeInvalidParams, Message: "Invalid params: _meta[" + strconv.Quote(key) + "] is required"}
}

// InvalidParams refuses params that do not decode (err from decoding).
func InvalidParams(err error) *Refusal {
	return &Refusal{Code: codeInvalidParams, Message: "Invalid params: " + jsonrpc.DescribeDecodeError(err)}
}

var metaProtocolVersionKey = []byte(`"` + MetaProtocolVersion + `"`)

// Marked reports whether a request's (or notification's) params carry
// _meta["io.modelcontextprotocol/protocolVersion"]: the mark of a message
// of the per-request era. Other messages pay one bytes.Contains. Params
// that name the key but are malformed count as marked: the per-request
// rules answer them with -32602.
func Marked(params jsontext.Value) bool {
	if !bytes.Contains(params, metaProtocolVersionKey) {
		return false
	}
	if params.Kind() != '{' {
		return true
	}
	return ScanMetaMembers(params, func(dec *jsontext.Decoder, member Member, _ jsontext.Value) error {
		if member == MemberVersion {
			return errNamed
		}
		return dec.SkipValue()
	}) != nil
}

// MayBeMarked reports whether params may be Marked: false means they
// certainly are not (the key is nowhere in them).
func MayBeMarked(params jsontext.Value) bool { return bytes.Contains(params, metaProtocolVersionKey) }

// errNamed stops Marked's reading at the protocolVersion member.
var errNamed = errors.New("revision: _meta names the protocol version")

// CheckMeta checks what every per-request revision's params must carry —
// an object with a _meta naming the revision (a string) and the client
// capabilities (an object) — and returns the revision named, or the
// refusal to answer. It leaves the rest unchecked (a bad logLevel, for
// instance, is the server's to refuse), so a transport calls it to check a
// request before it routes it; the server's full reading of _meta applies
// the same rules first, and when it succeeds CheckMeta returns the same
// revision and no refusal. It is Classify's check, for params that may
// not be marked (a request marked by an HTTP header alone).
func CheckMeta(params jsontext.Value) (string, *Refusal) {
	r := read(params)
	return r.Version, r.Refusal
}

// Member is the kind of a member of _meta: one of the revision's, or
// another.
type Member int

// The members of _meta the revision names.
const (
	MemberOther Member = iota
	MemberVersion
	MemberCaps
	MemberInfo
	MemberLevel
	MemberProgressToken
)

// MemberOf returns the kind of the _meta member of name (as read: a JSON
// string).
func MemberOf(name jsontext.Value) Member {
	switch {
	case NameIs(name, MetaProtocolVersion):
		return MemberVersion
	case NameIs(name, MetaClientCapabilities):
		return MemberCaps
	case NameIs(name, MetaClientInfo):
		return MemberInfo
	case NameIs(name, MetaLogLevel):
		return MemberLevel
	case NameIs(name, "progressToken"):
		return MemberProgressToken
	}
	return MemberOther
}

// NameIs reports whether raw, a JSON string as read (an object member's
// name, or a string value), is want; it allocates only for a string with
// escapes.
func NameIs(raw jsontext.Value, want string) bool {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == want
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == want
}

// ScanMetaMembers calls read for each member of params' _meta (params is
// an object; a _meta that is null or absent has no members), with the
// decoder at the member's value, which read must consume, the member's
// kind and its name as read (valid only until the decoder reads or peeks
// again). A _meta that is neither an object nor null gets the error an
// object's decoding gives.
func ScanMetaMembers(params jsontext.Value, read func(dec *jsontext.Decoder, member Member, name jsontext.Value) error) error {
	return ScanMeta(params, func(dec *jsontext.Decoder) error {
		switch dec.PeekKind() {
		case 'n':
			return dec.SkipValue()
		case '{':
		default:
			var obj *struct{}
			return json.UnmarshalDecode(dec, &obj)
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if err := read(dec, MemberOf(name), name); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken() // }
		return err
	})
}

// ScanMeta calls decode with a decoder at the value of params' _meta
// member, if there is one, reading past the other members.
func ScanMeta(params jsontext.Value, decode func(*jsontext.Decoder) error) error {
	return jsonrpc.WithDecoder(params, func(dec *jsontext.Decoder) error {
		if _, err := dec.ReadToken(); err != nil { // {: the caller checked the kind
			return err
		}
		for dec.PeekKind() != '}' {
			name, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if !NameIs(name, "_meta") {
				if err := dec.SkipValue(); err != nil {
					return err
				}
				continue
			}
			return decode(dec)
		}
		return nil
	})
}

// KnownVersions are the revisions DecodeInterned reads without allocating.
var KnownVersions = []string{V20260728, V20251125, V20250618, V20250326, V20241105}

// DecodeInterned decodes a string, without allocating when it is one of
// known (as written, without escapes).
func DecodeInterned(dec *jsontext.Decoder, known []string) (string, error) {
	if dec.PeekKind() != '"' {
		return decodeString(dec) // the error a string's decoding gives
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return "", err
	}
	for _, k := range known {
		if len(raw) == len(k)+2 && string(raw[1:len(raw)-1]) == k {
			return k, nil
		}
	}
	return decodeString(jsontext.NewDecoder(bytes.NewReader(raw)))
}

func decodeString(dec *jsontext.Decoder) (string, error) {
	var s string
	err := json.UnmarshalDecode(dec, &s)
	return s, err
}

// Reading is the classifier's reading of a request's params: whether the
// request follows the per-request rules, what CheckMeta says of its _meta,
// and where the members the server decodes are. It is read once, by the
// transport that routes the request (streamable HTTP) or by the server,
// and the server decodes its typed _meta from it without reading params
// again (unless Slow).
type Reading struct {
	// Version is the revision _meta names, when Refusal is nil.
	Version string
	// Refusal is CheckMeta's refusal of the _meta (nil when what every
	// per-request request must carry is there).
	Refusal *Refusal
	// Caps locates the value of the clientCapabilities member (an object
	// when Refusal is nil).
	Caps Span
	// Info locates the value of the clientInfo member (the zero Span when
	// it is absent or null).
	Info Span
	// Level is 1 + the index in KnownLevels of the logLevel member (0:
	// absent or null; see LevelName).
	Level uint8
	// Marked is Marked(params): the request follows the per-request rules.
	Marked bool
	// Slow reports that the reading above is not all the server needs: _meta
	// has members beyond the revision's four (progressToken among them),
	// or one the server refuses in its own words (a protocolVersion or
	// logLevel that is not a known level's string). The server then reads
	// _meta itself.
	Slow bool
	// named reports that _meta has a protocolVersion member (even null);
	// scanErr that its reading stopped at an error.
	named, scanErr bool
}

// LevelName returns the logLevel _meta names ("" when none).
func (r *Reading) LevelName() string {
	if r.Level == 0 {
		return ""
	}
	return KnownLevels[r.Level-1]
}

// Span locates a value in the params a Reading was read from: params[Start:End].
// The zero Span locates nothing.
type Span struct{ Start, End uint32 }

// In returns the value s locates in params (nil for the zero Span).
func (s Span) In(params []byte) jsontext.Value {
	if s.End == 0 {
		return nil
	}
	return params[s.Start:s.End]
}

// spanOf reads the value dec is at (over params, in place) and locates it
// in params; ok is false for params too long to locate in a Span.
func spanOf(dec *jsontext.Decoder, params []byte) (s Span, ok bool, err error) {
	raw, err := dec.ReadValue()
	if err != nil || uint64(len(params)) > math.MaxUint32 {
		return s, false, err
	}
	end := dec.InputOffset()
	return Span{Start: uint32(end - int64(len(raw))), End: uint32(end)}, true, nil
}

// Classify reads a request's (or notification's) params once to hand it to
// its revision's rules: unmarked params (the negotiated era) give the zero
// Reading and cost one bytes.Contains; marked ones are checked as
// CheckMeta checks them, and the members the server decodes are located.
// Both the transport that routes a request and the server call it: the
// transport hands its Reading over with the message.
func Classify(params jsontext.Value) Reading {
	if !MayBeMarked(params) {
		return Reading{}
	}
	r := read(params)
	switch {
	case params.Kind() != '{', r.named:
		r.Marked = true
	case r.scanErr:
		r.Marked = Marked(params) // malformed: marked if the key is where the era is named
	}
	if !r.Marked {
		return Reading{}
	}
	return r
}

// read is the one reading of _meta behind Classify and CheckMeta.
func read(params jsontext.Value) (r Reading) {
	if params.Kind() != '{' {
		r.Refusal = NoParams
		return r
	}
	hasVersion, hasCaps := false, false
	err := ScanMetaMembers(params, func(dec *jsontext.Decoder, member Member, _ jsontext.Value) (err error) {
		kind := dec.PeekKind()
		var located bool
		switch {
		case member == MemberVersion:
			r.named = true
			switch kind {
			case '"':
				r.Version, err = DecodeInterned(dec, KnownVersions)
				hasVersion = err == nil
			case 'n':
				err = dec.SkipValue()
			default:
				r.Slow = true // the server's words: not a string
				err = dec.SkipValue()
			}
		case member == MemberCaps:
			r.Caps, located, err = spanOf(dec, params)
			hasCaps = err == nil && kind == '{'
			if kind == 'n' {
				r.Caps = Span{}
			} else if !hasCaps || !located {
				r.Slow = true
			}
		case member == MemberInfo:
			if r.Info, located, err = spanOf(dec, params); kind == 'n' {
				r.Info = Span{}
			} else if !located {
				r.Slow = true
			}
		case member == MemberLevel && kind == '"':
			var l string
			if l, err = DecodeInterned(dec, KnownLevels); err == nil {
				if i := slices.Index(KnownLevels, l); i >= 0 {
					r.Level = uint8(i + 1)
				} else {
					r.Slow = true // an unknown level: the server's words
				}
			}
		case member == MemberLevel && kind == 'n':
			err = dec.SkipValue()
		default: // another member, or a logLevel that is not a string
			r.Slow = true
			err = dec.SkipValue()
		}
		return err
	})
	switch {
	case err != nil:
		r.Refusal, r.scanErr, r.Slow = InvalidParams(err), true, true
	case !hasVersion:
		r.Refusal = MissingMeta(MetaProtocolVersion)
	case !hasCaps:
		r.Refusal = MissingMeta(MetaClientCapabilities)
	}
	if r.Refusal != nil {
		r.Version = ""
	}
	return r
}

// KnownLevels are the logging levels of logLevel, which Classify reads
// without allocating.
var KnownLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// MetaCorrelationID is the _meta key a client may set on a request to
// choose the correlation id its errors (and a tool call's run) carry.
const MetaCorrelationID = "correlationId"

var metaCorrelationIDKey = []byte(`"` + MetaCorrelationID + `"`)

// CorrelationID returns the string params._meta.correlationId of a
// request, or "" when its params carry none (or are malformed). Params
// without the key cost one bytes.Contains: it is read on the way to an
// error, never for a request that succeeds.
func CorrelationID(params jsontext.Value) string {
	if !bytes.Contains(params, metaCorrelationIDKey) {
		return ""
	}
	var p struct {
		Meta struct {
			CorrelationID string `json:"correlationId"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.Meta.CorrelationID
}
