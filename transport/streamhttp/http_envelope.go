package streamhttp

import (
	"bytes"
	"errors"
	"math"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
)

// envelope is what the HTTP transport needs to know about one message (or
// batch) to route it: which requests it carries, which responses, and
// whether it is an initialize request.
type envelope struct {
	requests   []string // raw ids of the requests
	responses  []string // raw ids of the responses (not null)
	notes      int      // notifications
	batch      bool
	initialize bool // a single initialize request

	// metaVersion reports that a request or notification carries
	// params._meta["io.modelcontextprotocol/protocolVersion"]: the mark of
	// a modern (2026-07-28) message.
	metaVersion bool
	// x is the single message of a body that is not a batch, and for a
	// request or notification the classifier's reading of its params
	// (revision.Classify): read here once, for the routing and the server,
	// which gets it as the message's handoff.Request (see handoff).
	x   handoff.Request
	one [1]string // requests' room for the single message's id

	// rev2025 is what only the 2025 rules read of the message: the
	// requests it cancels. It is empty in a build without those rules
	// (keel_omit2025).
	rev2025 envelopeRev2025

	// eph is the ephemeral session allocated with the envelope, for a
	// POST that an ephemeral session is expected to serve (nil: none).
	eph *ephemeral
}

// handoff returns the handoff.Request of e's single message, which the
// session hands to the server; nil for a batch (or no envelope: a message
// the session made itself).
func (e *envelope) handoff() *handoff.Request {
	if e == nil || e.batch {
		return nil
	}
	return &e.x
}

// hasRequests reports whether the message carries at least one request.
func (e *envelope) hasRequests() bool { return len(e.requests) > 0 }

// parseIncoming decodes a POST body strictly (jsonrpc.DecodeOwned per
// message: the body is the POST's own, so nothing is copied from it). A
// malformed message, or a batch holding one, is reported as the
// DecodeError to answer with. into, if not nil, is the zero envelope to
// fill (but for its eph).
func parseIncoming(body []byte, maxDepth int, into *envelope) (*envelope, *jsonrpc.DecodeError) {
	env := into
	if env == nil {
		env = new(envelope)
	}
	if !jsonrpc.IsBatch(body) {
		m, derr := jsonrpc.DecodeOwned(body, maxDepth)
		if derr != nil {
			return nil, derr
		}
		if m.Kind != jsonrpc.KindResponse {
			env.x.Reading = revision.Classify(m.Params)
			env.metaVersion = env.x.Reading.Marked
		}
		env.requests = env.one[:0]
		env.add(&m)
		env.x.Msg, env.x.Raw, env.x.MaxDepth = m, body, int32(min(maxDepth, math.MaxInt32))
		env.initialize = m.Kind == jsonrpc.KindRequest && m.Method == "initialize"
		return env, nil
	}
	env.batch = true
	if derr := jsonrpc.CheckDepth(body, maxDepth); derr != nil {
		return nil, derr
	}
	elems, derr := jsonrpc.SplitBatch(body)
	if derr != nil {
		return nil, derr
	}
	for _, e := range elems {
		m, derr := jsonrpc.DecodeOwned(e, maxDepth)
		if derr != nil {
			return nil, derr
		}
		if m.Kind != jsonrpc.KindResponse && !env.metaVersion {
			env.metaVersion = revision.Marked(m.Params)
		}
		env.add(&m)
	}
	return env, nil
}

// add counts m in e's requests, responses and notifications.
func (e *envelope) add(m *jsonrpc.Message) {
	switch m.Kind {
	case jsonrpc.KindRequest:
		e.requests = append(e.requests, string(m.ID))
	case jsonrpc.KindResponse:
		if m.ID != nil && string(m.ID) != "null" {
			e.responses = append(e.responses, string(m.ID))
		}
	case jsonrpc.KindNotification:
		e.notes++
		e.rev2025.noteNotification(m)
	}
}

// outgoing describes a message a server or client writes.
type outgoing struct {
	request  bool     // a request (method and id)
	response bool     // a response or a batch of responses
	ids      []string // raw ids of the responses, or of the request
	method   string
}

var errNotJSONRPC = errors.New("transport: not a JSON-RPC message")

// peekOutgoing reads the envelope members of msg (an object, or an array of
// objects) without decoding params or results.
func peekOutgoing(msg []byte) (outgoing, error) {
	p := peekerPool.Get().(*peeker)
	p.r.Reset(msg)
	p.dec.Reset(&p.r)
	out, err := peekDecode(&p.dec)
	p.r.Reset(nil)
	p.dec.Reset(&p.r) // drop the reference to msg
	peekerPool.Put(p)
	return out, err
}

// peekWritten is peekOutgoing for a message the server writes: a response
// in the form package mcp writes is read by its head (responseHead), the
// rest in full. Messages read from the network always go through
// peekOutgoing. The id of a response read by its head is put in one (the
// caller's room, which ids then uses).
func peekWritten(msg []byte, one *[1]string) (outgoing, error) {
	if id, ok := responseHead(msg); ok {
		out := outgoing{response: true}
		if string(id) != "null" {
			one[0] = string(id)
			out.ids = one[:]
		}
		return out, nil
	}
	return peekOutgoing(msg)
}

// responseHead reads the id of a response written the way package mcp
// writes one — {"jsonrpc":"2.0","id":ID,"result": or ,"error": — without
// reading the rest (a server's own output: the transport need not check
// it). ID is a number, null, or a string without escapes; ok is false for
// anything else, which peekOutgoing then reads in full.
func responseHead(msg []byte) (id []byte, ok bool) {
	const head = `{"jsonrpc":"2.0","id":`
	if !bytes.HasPrefix(msg, []byte(head)) {
		return nil, false
	}
	rest := msg[len(head):]
	n := 0
	switch {
	case len(rest) == 0:
		return nil, false
	case rest[0] == '"':
		i := bytes.IndexByte(rest[1:], '"')
		if i < 0 || bytes.IndexByte(rest[1:1+i], '\\') >= 0 {
			return nil, false
		}
		n = i + 2
	case bytes.HasPrefix(rest, []byte("null")):
		n = 4
	default:
		for n < len(rest) && (rest[n] >= '0' && rest[n] <= '9' || rest[n] == '-' || rest[n] == '+' || rest[n] == '.' || rest[n] == 'e' || rest[n] == 'E') {
			n++
		}
		if n == 0 {
			return nil, false
		}
	}
	if after := rest[n:]; !bytes.HasPrefix(after, []byte(`,"result":`)) && !bytes.HasPrefix(after, []byte(`,"error":`)) {
		return nil, false
	}
	return rest[:n], true
}

// peeker is a pooled decoder for peekOutgoing.
type peeker struct {
	r   bytes.Reader
	dec jsontext.Decoder
}

var peekerPool = sync.Pool{New: func() any { return new(peeker) }}

func peekDecode(dec *jsontext.Decoder) (outgoing, error) {
	var out outgoing
	switch dec.PeekKind() {
	case '{':
		if err := peekObject(dec, &out); err != nil {
			return out, err
		}
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return out, err
		}
		for dec.PeekKind() == '{' {
			var one outgoing
			if err := peekObject(dec, &one); err != nil {
				return out, err
			}
			out.response = out.response || one.response
			out.request = out.request || one.request
			out.ids = append(out.ids, one.ids...)
		}
		if _, err := dec.ReadToken(); err != nil {
			return out, err
		}
	default:
		return out, errNotJSONRPC
	}
	return out, nil
}

func peekObject(dec *jsontext.Decoder, out *outgoing) error {
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var id jsontext.Value
	hasMethod, hasResult := false, false
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String()
		switch name {
		case "id":
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			id = append(jsontext.Value(nil), v...)
			continue
		case "method":
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			hasMethod = true
			if v.Kind() == '"' {
				_ = jsonv2.Unmarshal(v, &out.method)
			}
			continue
		case "result", "error":
			hasResult = true
		}
		if err := dec.SkipValue(); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	switch {
	case hasMethod:
		if id != nil {
			out.request = true
			out.ids = append(out.ids, string(id))
		}
	case hasResult:
		out.response = true
		if id != nil && string(id) != "null" {
			out.ids = append(out.ids, string(id))
		}
	default:
		return errNotJSONRPC
	}
	return nil
}

// resultProtocolVersion returns result.protocolVersion of an initialize
// response ("" for an error response or a malformed one).
func resultProtocolVersion(msg []byte) string {
	var r struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if jsonv2.Unmarshal(msg, &r, jsonv2.RejectUnknownMembers(false)) != nil || r.Result == nil {
		return ""
	}
	return r.Result.ProtocolVersion
}
