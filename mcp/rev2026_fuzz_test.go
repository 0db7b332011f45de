package mcp

import (
	"log/slog"
	"reflect"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/revision"
)

// FuzzParseRequestMeta: any params either decode into a requestMeta that
// has the two required keys, or are refused with -32602; never a panic.
func FuzzParseRequestMeta(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}},"io.modelcontextprotocol/logLevel":"debug","progressToken":7}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}`, `{"_meta":null}`, `[]`, `null`, `{}`, `{"_meta":{"io.modelcontextprotocol/logLevel":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rm, e := parseRequestMeta(jsontext.Value(b))
		if e != nil {
			if e.Code != CodeInvalidParams {
				t.Fatalf("code %d, want -32602", e.Code)
			}
			return
		}
		if rm.LogLevel != "" && !rm.LogLevel.Valid() {
			t.Fatalf("accepted an unknown logLevel %q", rm.LogLevel)
		}
		if !revision.Marked(jsontext.Value(b)) {
			t.Fatalf("accepted params the era test calls legacy: %s", b)
		}
	})
}

// FuzzOpenState: a requestState verifies only if it is exactly the one the
// server sealed for this request; anything else is refused with -32602,
// never a panic.
func FuzzOpenState(f *testing.F) {
	s := NewServer(&ServerOptions{StateKey: []byte("fuzz key: 32 bytes or more, fine!"), Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return time.Unix(1e9, 0) }})
	sealed := s.sealState(&sealedState{Method: methodToolsCall, Target: "t", Digest: "d", Keys: map[string]string{"k": methodRootsList}, State: []byte("s")})
	f.Add(sealed)
	f.Add("x" + sealed[1:])
	f.Add("")
	f.Add(".")
	f.Add("e30.e30")
	f.Fuzz(func(t *testing.T, wire string) {
		st, e := s.openState(wire, methodToolsCall, "t", "d", "")
		if wire == sealed {
			if e != nil || string(st.State) != "s" {
				t.Fatalf("the sealed state did not verify: %v", e)
			}
			return
		}
		if e == nil {
			t.Fatalf("accepted a state the server did not seal: %q", wire)
		}
		if e.Code != CodeInvalidParams {
			t.Fatalf("code %d, want -32602", e.Code)
		}
	})
}

// FuzzMarked: the scanner never panics, and on valid JSON (params
// reach it validated by the message decoder) it agrees with a full decode
// (the reference): modern when _meta names the protocol version, or when
// params that contain the key cannot be decoded into an object.
func FuzzMarked(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{"a":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}`,
		`{"x":"io.modelcontextprotocol/protocolVersion","_meta":{}}`,
		`{"_meta":null,"io.modelcontextprotocol/protocolVersion":1}`,
		`{"_meta":"io.modelcontextprotocol/protocolVersion"}`,
		`["io.modelcontextprotocol/protocolVersion"]`,
		`{"_meta":{"a":1,"io.modelcontextprotocol/protocolVersion":null}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":1},"_meta":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := revision.Marked(jsontext.Value(b))
		if !jsontext.Value(b).IsValid() {
			return
		}
		want := false
		if revision.MayBeMarked(b) {
			var p struct {
				Meta map[string]jsontext.Value `json:"_meta"`
			}
			if jsonv2.Unmarshal(b, &p) != nil {
				want = true
			} else {
				_, want = p.Meta[revision.MetaProtocolVersion]
			}
		}
		if got != want {
			t.Fatalf("revision.Marked(%s) = %v, a full decode says %v", b, got, want)
		}
	})
}

// FuzzDecodeMetaMatchesStructDecoding: the hand-written _meta readers
// (decodeMeta and revision.CheckMeta, which read members one by one to
// allocate less) read every input as decoding into a struct of the
// members does, errors and their messages included.
func FuzzDecodeMetaMatchesStructDecoding(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"a":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-\u0031","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info","progressToken":"t","x":[1]}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}`, `{"_meta":"x"}`, `{"_meta":null}`, `{"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}`,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":1}}}`, `{"_meta":{"progressToken":null}}`,
		`{"_meta":{"io.modelcontextprotocol/logLevel":5}}`, `{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":2}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}`,
		`{"_meta":{"x":1e400}}`, `{"_meta":{"progressToken":-1e400,"y":{"z":[1e999]}}}`,
	} {
		f.Add([]byte(s))
	}
	type reference struct {
		ProtocolVersion    *string             `json:"io.modelcontextprotocol/protocolVersion"`
		ClientCapabilities *ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
		ClientInfo         *Implementation     `json:"io.modelcontextprotocol/clientInfo"`
		LogLevel           *LoggingLevel       `json:"io.modelcontextprotocol/logLevel"`
		ProgressToken      jsontext.Value      `json:"progressToken"`
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v := jsontext.Value(b); v.Kind() != '{' || !v.IsValid() {
			return // params reach the decoder as a valid object
		}
		checkCheckMeta(t, b)
		var w requestMetaWire
		err := decodeMeta(b, &w)
		var ref *reference
		refErr := revision.ScanMeta(b, func(dec *jsontext.Decoder) error { return jsonv2.UnmarshalDecode(dec, &ref) })
		if (err == nil) != (refErr == nil) {
			t.Fatalf("%s: error %v, the struct's %v", b, err, refErr)
		}
		if err != nil {
			if got, want := invalidParams(err).Message, invalidParams(refErr).Message; got != want {
				t.Fatalf("%s: message %q, the struct's %q", b, got, want)
			}
			return
		}
		if ref == nil {
			ref = &reference{}
		}
		check := func(what string, ok bool) {
			if !ok {
				t.Fatalf("%s: %s differs from the struct's", b, what)
			}
		}
		check("protocolVersion", w.hasVersion == (ref.ProtocolVersion != nil) && (ref.ProtocolVersion == nil || *ref.ProtocolVersion == w.ProtocolVersion))
		check("clientCapabilities", w.hasCaps == (ref.ClientCapabilities != nil) && (ref.ClientCapabilities == nil || reflect.DeepEqual(*ref.ClientCapabilities, w.ClientCapabilities)))
		if !reflect.DeepEqual(ref.ClientInfo, w.ClientInfo) {
			t.Fatalf("%s: clientInfo %#v, the struct's %#v", b, w.ClientInfo, ref.ClientInfo)
		}
		check("logLevel", w.hasLevel == (ref.LogLevel != nil) && (ref.LogLevel == nil || *ref.LogLevel == w.LogLevel))
		check("progressToken", string(ref.ProgressToken) == string(w.ProgressToken))
		// The other members are what tools/call's own reading of _meta
		// (callMeta) gives a 2025 request: ToolCall.Meta is the same in
		// both revisions.
		// A member no any holds leaves the map partial (tools/call then
		// reads _meta itself), and the revision's rules pass.
		var call struct {
			Meta callMeta `json:"_meta"`
		}
		if err := jsonv2.Unmarshal(b, &call); err != nil {
			if !w.partial {
				t.Fatalf("%s: callMeta fails (%v), the map is not partial", b, err)
			}
			return
		}
		if w.partial || !reflect.DeepEqual(Meta(call.Meta), w.Meta) {
			t.Fatalf("%s: other members %#v (partial %v), callMeta's %#v", b, w.Meta, w.partial, call.Meta)
		}
	})
}

// checkCheckMeta compares revision.CheckMeta (read member by member)
// with the same rules applied to a struct decoding of _meta.
func checkCheckMeta(t *testing.T, b []byte) {
	var m struct {
		Meta *struct {
			ProtocolVersion    jsontext.Value `json:"io.modelcontextprotocol/protocolVersion"`
			ClientCapabilities jsontext.Value `json:"io.modelcontextprotocol/clientCapabilities"`
		}
	}
	wantVersion, wantErr := "", (*Error)(nil)
	var version string
	switch err := revision.ScanMeta(b, func(dec *jsontext.Decoder) error { return jsonv2.UnmarshalDecode(dec, &m.Meta) }); {
	case err != nil:
		wantErr = invalidParams(err)
	case m.Meta == nil || m.Meta.ProtocolVersion.Kind() != '"' || jsonv2.Unmarshal(m.Meta.ProtocolVersion, &version) != nil:
		wantErr = refused(revision.MissingMeta(revision.MetaProtocolVersion))
	case m.Meta.ClientCapabilities.Kind() != '{':
		wantErr = refused(revision.MissingMeta(revision.MetaClientCapabilities))
	default:
		wantVersion = version
	}
	got, gotErr := revision.CheckMeta(b)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Message != wantErr.Message) || got != wantVersion {
		t.Fatalf("%s: revision.CheckMeta = %q, %v; the struct's rules give %q, %v", b, got, gotErr, wantVersion, wantErr)
	}
	// A transport that has parseRequestMeta's reading takes its version
	// for revision.CheckMeta's when it succeeds (see streamhttp).
	if meta, e := parseRequestMeta(b); e == nil && (gotErr != nil || got != meta.ProtocolVersion) {
		t.Fatalf("%s: parseRequestMeta succeeds with %q, revision.CheckMeta = %q, %v", b, meta.ProtocolVersion, got, gotErr)
	}
}

// FuzzClassifyRequest: the reader's one reading of params (classifyRequest)
// agrees with revision.Marked, and for a modern request with
// parseRequestMeta.
func FuzzClassifyRequest(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"arguments":{"io.modelcontextprotocol/protocolVersion":1}}`, `{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}`,
		`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":5},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":5}},"x":"io.modelcontextprotocol/protocolVersion"}`,
		`["io.modelcontextprotocol/protocolVersion"]`, `{"_meta":"io.modelcontextprotocol/protocolVersion"}`,
		// The classifier's reading is all it takes (no second reading):
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{"listChanged":true}},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{ },"io.modelcontextprotocol/logLevel":"loud"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":null,"io.modelcontextprotocol/clientInfo":null}}`,
		// ... and where it is not (the server's words):
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":5},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":"loud"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":3}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1,"x":[1]}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}`,
	} {
		f.Add([]byte(s))
	}
	var infos clientInfoCache // shared by the inputs: a value read from it is the one decoded
	f.Fuzz(func(t *testing.T, b []byte) {
		if !jsontext.Value(b).IsValid() {
			return // params reach the reader validated
		}
		if rd := revision.Classify(b); rd.Marked {
			// The classifier's check is CheckMeta's.
			v, refusal := revision.CheckMeta(b)
			if v != rd.Version || !reflect.DeepEqual(refusal, rd.Refusal) {
				t.Fatalf("%s: Classify %q %v, CheckMeta %q %v", b, rd.Version, rd.Refusal, v, refusal)
			}
		}
		modern, meta, e := classifyRequest(b, &infos)
		if want := revision.Marked(b); modern != want {
			t.Fatalf("%s: modern %v, revision.Marked %v", b, modern, want)
		}
		if !modern {
			return
		}
		wantMeta, wantErr := parseRequestMeta(b)
		if (e == nil) != (wantErr == nil) || (e != nil && e.Message != wantErr.Message) || !reflect.DeepEqual(meta, wantMeta) {
			t.Fatalf("%s: %+v %v, parseRequestMeta %+v %v", b, meta, e, wantMeta, wantErr)
		}
	})
}
