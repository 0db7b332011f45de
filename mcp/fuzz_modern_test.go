package mcp

import (
	"bytes"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzParseRequestMeta: any params either decode into a RequestMeta that
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
		rm, e := ParseRequestMeta(jsontext.Value(b))
		if e != nil {
			if e.Code != CodeInvalidParams {
				t.Fatalf("code %d, want -32602", e.Code)
			}
			return
		}
		if rm.LogLevel != "" && !rm.LogLevel.Valid() {
			t.Fatalf("accepted an unknown logLevel %q", rm.LogLevel)
		}
		if !IsModernRequest(jsontext.Value(b)) {
			t.Fatalf("accepted params the era test calls legacy: %s", b)
		}
	})
}

// FuzzOpenState: a requestState verifies only if it is exactly the one the
// server sealed for this request; anything else is refused with -32602,
// never a panic.
func FuzzOpenState(f *testing.F) {
	s := NewServer(&ServerOptions{StateKey: []byte("fuzz key: 32 bytes or more, fine!"), Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return time.Unix(1e9, 0) }})
	sealed := s.sealState(&sealedState{Method: MethodToolsCall, Target: "t", Digest: "d", Keys: map[string]string{"k": MethodRootsList}, State: []byte("s")})
	f.Add(sealed)
	f.Add("x" + sealed[1:])
	f.Add("")
	f.Add(".")
	f.Add("e30.e30")
	f.Fuzz(func(t *testing.T, wire string) {
		st, e := s.openState(wire, MethodToolsCall, "t", "d", "")
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

// FuzzIsModernRequest: the scanner never panics, and on valid JSON (params
// reach it validated by the message decoder) it agrees with a full decode
// (the reference): modern when _meta names the protocol version, or when
// params that contain the key cannot be decoded into an object.
func FuzzIsModernRequest(f *testing.F) {
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
		got := IsModernRequest(jsontext.Value(b))
		if !jsontext.Value(b).IsValid() {
			return
		}
		want := false
		if bytes.Contains(b, metaProtocolVersionKey) {
			var p struct {
				Meta map[string]jsontext.Value `json:"_meta"`
			}
			if json.Unmarshal(b, &p) != nil {
				want = true
			} else {
				_, want = p.Meta[MetaProtocolVersion]
			}
		}
		if got != want {
			t.Fatalf("IsModernRequest(%s) = %v, a full decode says %v", b, got, want)
		}
	})
}

// FuzzDecodeMetaMatchesStructDecoding: the hand-written _meta decoder
// (decodeMeta, which reads members one by one to allocate less) reads
// every input as decoding into a struct of the members does, errors and
// their messages included.
func FuzzDecodeMetaMatchesStructDecoding(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
		`{"a":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-\u0031","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info","progressToken":"t","x":[1]}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}`, `{"_meta":"x"}`, `{"_meta":null}`, `{"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}`,
		`{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":1}}}`, `{"_meta":{"progressToken":null}}`,
		`{"_meta":{"io.modelcontextprotocol/logLevel":5}}`, `{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":2}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolVersion":"b"}}`,
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
		var w requestMetaWire
		err := decodeMeta(b, &w)
		var ref *reference
		refErr := scanMeta(b, func(dec *jsontext.Decoder) error { return json.UnmarshalDecode(dec, &ref) })
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
	})
}
