package aacp

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testMsgID = "6f1c1f0e-6f55-4b8e-9a0e-3a3f1e1b2c3d"
	testReqID = "0d2a9e64-8b4f-4c1e-8d8e-5b9f2f7e1a20"
)

func validEnvelope() *Envelope {
	return &Envelope{MessageID: testMsgID, RequestID: testReqID, SourceAgentID: "planner", TargetAgentID: "coder",
		Seq: 7, Ack: 3, MessageType: MessageRequest, Timestamp: time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC),
		Payload: json.RawMessage(raw(`{"task":"build","n":[1,2]}`))}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	env := validEnvelope()
	b, err := EncodeEnvelope(env)
	require.NoError(t, err)
	assert.Equal(t, `{"messageId":"`+testMsgID+`","requestId":"`+testReqID+`","sourceAgentId":"planner",`+
		`"targetAgentId":"coder","seq":7,"ack":3,"messageType":"REQUEST","timestamp":"2026-05-06T07:08:09.123456789Z",`+
		`"payload":{"task":"build","n":[1,2]}}`, string(b))
	got, err := DecodeEnvelope(b)
	require.NoError(t, err)
	assert.Equal(t, env, got)

	// Optional members: no requestId on an EVENT, no ack.
	ev := validEnvelope()
	ev.RequestID, ev.Ack, ev.MessageType, ev.Payload = "", 0, MessageEvent, json.RawMessage(raw(`null`))
	b, err = EncodeEnvelope(ev)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "requestId")
	assert.NotContains(t, string(b), `"ack"`)
	got, err = DecodeEnvelope(b)
	require.NoError(t, err)
	assert.Equal(t, ev, got)

	// A non-UTC timestamp is encoded in UTC.
	local := validEnvelope()
	local.Timestamp = local.Timestamp.In(time.FixedZone("X", 3600))
	b, err = EncodeEnvelope(local)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"timestamp":"2026-05-06T07:08:09.123456789Z"`)
}

func TestDecodeEnvelopeStrict(t *testing.T) {
	good, err := EncodeEnvelope(validEnvelope())
	require.NoError(t, err)
	s := string(good)
	tests := []struct {
		name, input, field string
	}{
		{"not JSON", `{"messageId":`, ""},
		{"not an object", `[1]`, ""},
		{"unknown member", strings.Replace(s, `"seq":7`, `"seq":7,"extra":1`, 1), ""},
		{"case-insensitive name", strings.Replace(s, `"seq"`, `"SEQ"`, 1), ""},
		{"duplicate member", strings.Replace(s, `"seq":7`, `"seq":7,"seq":8`, 1), ""},
		{"duplicate in payload", strings.Replace(s, `"n":[1,2]`, `"n":1,"n":2`, 1), ""},
		{"invalid UTF-8", strings.Replace(s, "planner", "plan\xffner", 1), ""},
		{"messageId not a UUID", strings.Replace(s, testMsgID, "msg-1", 1), "messageId"},
		{"messageId UUID v1", strings.Replace(s, testMsgID, "6f1c1f0e-6f55-1b8e-9a0e-3a3f1e1b2c3d", 1), "messageId"},
		{"requestId bad variant", strings.Replace(s, testReqID, "0d2a9e64-8b4f-4c1e-cd8e-5b9f2f7e1a20", 1), "requestId"},
		{"REQUEST without requestId", strings.Replace(s, `"requestId":"`+testReqID+`",`, "", 1), "requestId"},
		{"empty source", strings.Replace(s, `"planner"`, `""`, 1), "sourceAgentId"},
		{"control character in target", strings.Replace(s, `"coder"`, `"co\nder"`, 1), "targetAgentId"},
		{"seq 0", strings.Replace(s, `"seq":7`, `"seq":0`, 1), "seq"},
		{"negative seq", strings.Replace(s, `"seq":7`, `"seq":-1`, 1), "seq"},
		{"fractional seq", strings.Replace(s, `"seq":7`, `"seq":7.5`, 1), "seq"},
		{"seq as string", strings.Replace(s, `"seq":7`, `"seq":"7"`, 1), "seq"},
		{"unknown type", strings.Replace(s, `"REQUEST"`, `"request"`, 1), "messageType"},
		{"bad timestamp", strings.Replace(s, `2026-05-06T07:08:09.123456789Z`, `yesterday`, 1), "timestamp"},
		{"missing timestamp", strings.Replace(s, `"timestamp":"2026-05-06T07:08:09.123456789Z",`, "", 1), "timestamp"},
		{"missing payload", strings.Replace(s, `,"payload":{"task":"build","n":[1,2]}`, "", 1), "payload"},
		{"trailing data", s + `{}`, ""},
		{"too deep", strings.Replace(s, `[1,2]`, strings.Repeat("[", 70)+strings.Repeat("]", 70), 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEnvelope([]byte(tt.input))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidEnvelope)
			var ee *EnvelopeError
			require.True(t, errors.As(err, &ee))
			if tt.field != "" {
				assert.Equal(t, tt.field, ee.Field, "%v", err)
			}
		})
	}
	_, err = DecodeEnvelope(make([]byte, MaxEnvelopeBytes+1))
	assert.ErrorIs(t, err, ErrInvalidEnvelope)
}

func TestEncodeEnvelopeValidates(t *testing.T) {
	for name, mut := range map[string]func(*Envelope){
		"bad messageId":  func(e *Envelope) { e.MessageID = "x" },
		"no payload":     func(e *Envelope) { e.Payload = nil },
		"invalid JSON":   func(e *Envelope) { e.Payload = json.RawMessage(raw(`{"a":`)) },
		"no timestamp":   func(e *Envelope) { e.Timestamp = time.Time{} },
		"long agent id":  func(e *Envelope) { e.TargetAgentID = strings.Repeat("a", MaxAgentIDBytes+1) },
		"unknown type":   func(e *Envelope) { e.MessageType = "ACK" },
		"response no id": func(e *Envelope) { e.MessageType, e.RequestID = MessageResponse, "" },
	} {
		env := validEnvelope()
		mut(env)
		_, err := EncodeEnvelope(env)
		assert.ErrorIs(t, err, ErrInvalidEnvelope, name)
	}
}

func TestEnvelopeDecodePayload(t *testing.T) {
	env := validEnvelope()
	var p struct {
		Task string `json:"task"`
		N    []int  `json:"n"`
	}
	require.NoError(t, env.Decode(&p))
	assert.Equal(t, "build", p.Task)
	var wrong struct{ Task string }
	assert.Error(t, env.Decode(&wrong), "strict: unknown members rejected")
}

func TestIsUUIDv4(t *testing.T) {
	for i := 0; i < 1000; i++ {
		require.True(t, IsUUIDv4(newUUID()))
	}
	assert.True(t, IsUUIDv4(strings.ToUpper(testMsgID)))
	for _, s := range []string{"", testMsgID[:35], testMsgID + "0", "6f1c1f0e_6f55-4b8e-9a0e-3a3f1e1b2c3d",
		"6f1c1f0e-6f55-4b8e-9a0e-3a3f1e1b2c3g", "{6f1c1f0e-6f55-4b8e-9a0e-3a3f1e1b2c3d}"} {
		assert.False(t, IsUUIDv4(s), s)
	}
}

// TestNewUUIDTimeOrdered: ids a Node creates keep the v4 layout the
// envelope requires, carry their creation time in milliseconds in their
// first 48 bits (so ids made in a later millisecond sort after), and do not
// repeat within one millisecond.
func TestNewUUIDTimeOrdered(t *testing.T) {
	tests := []struct {
		name       string
		ms, r1, r2 uint64
		want       string
	}{
		{"zero", 0, 0, 0, "00000000-0000-4000-8000-000000000000"},
		{"all ones", 1<<48 - 1, ^uint64(0), ^uint64(0), "ffffffff-ffff-4fff-bfff-ffffffffffff"},
		{"time above 48 bits dropped", 1<<48 | 0x0123456789ab, 0xabc, 0x123456789abcdef0, "01234567-89ab-4abc-9234-56789abcdef0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := formatUUID(tt.ms, tt.r1, tt.r2)
			assert.Equal(t, tt.want, got)
			assert.True(t, IsUUIDv4(got))
		})
	}
	before := uint64(time.Now().UnixMilli())
	first := newUUID()
	for uint64(time.Now().UnixMilli()) <= before+1 {
		time.Sleep(time.Millisecond)
	}
	seen := map[string]bool{}
	var last string
	for i := 0; i < 10000; i++ {
		id := newUUID()
		require.False(t, seen[id], "repeated id %s", id)
		seen[id] = true
		require.Less(t, first, id, "an id of a later millisecond sorts after")
		require.LessOrEqual(t, last[:min(len(last), 13)], id[:13], "time prefixes never go back")
		last = id
	}
	stamp, err := strconv.ParseUint(strings.ReplaceAll(first[:13], "-", ""), 16, 64)
	require.NoError(t, err)
	assert.InDelta(t, float64(before), float64(stamp), 5, "the first 48 bits are the creation time in ms")
}

// FuzzDecodeEnvelope: the decoder never panics, and whatever it accepts
// encodes and decodes back to the same envelope.
func FuzzDecodeEnvelope(f *testing.F) {
	good, _ := EncodeEnvelope(validEnvelope())
	f.Add(good)
	f.Add([]byte(`{"messageId":"` + testMsgID + `","sourceAgentId":"a","targetAgentId":"b","seq":1,` +
		`"messageType":"EVENT","timestamp":"2026-01-01T00:00:00Z","payload":null}`))
	f.Add([]byte(`{"seq":1,"seq":2}`))
	f.Add([]byte(`[[[[[[]]]]]]`))
	f.Add([]byte("{\"messageId\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, err := DecodeEnvelope(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidEnvelope) {
				t.Fatalf("error %v does not match ErrInvalidEnvelope", err)
			}
			return
		}
		b, err := EncodeEnvelope(env)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", data, err)
		}
		again, err := DecodeEnvelope(b)
		if err != nil {
			t.Fatalf("cannot decode %q, the encoding of accepted %q: %v", b, data, err)
		}
		if !again.Timestamp.Equal(env.Timestamp) {
			t.Fatalf("timestamp %v became %v", env.Timestamp, again.Timestamp)
		}
		b2, err := EncodeEnvelope(again)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("encoding not stable: %q vs %q (%v)", b, b2, err)
		}
	})
}
