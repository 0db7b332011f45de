package aacp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dead letters through the Node: listed with their reason; a drop fails
// the pending request with that reason; a retry requeues the message.
func TestNodeDeadLetters(t *testing.T) {
	n, st, _ := manualNode(t, echoMux(nil), &Options{AllowUnknownTargets: true})
	drop, err := n.Submit(bg, "client", "elsewhere", 1)
	require.NoError(t, err)
	keep, err := n.Submit(bg, "client", "elsewhere", 2)
	require.NoError(t, err)
	for _, id := range []string{drop, keep} {
		msgs, err := st.ListMessagesInState(bg, OutcomeUnknown, time.Time{})
		require.NoError(t, err)
		for _, m := range msgs {
			if m.RequestID == id {
				ok, err := st.Quarantine(bg, m.MessageID, "poison "+id)
				require.NoError(t, err)
				require.True(t, ok)
			}
		}
	}
	dead, err := n.DeadLetters(bg, 0)
	require.NoError(t, err)
	require.Len(t, dead, 2)
	byReq := map[string]*DeadLetter{}
	for _, d := range dead {
		byReq[d.RequestID] = d
	}
	require.NoError(t, n.DropDeadLetter(bg, byReq[drop].MessageID))
	rec, err := st.GetRequestRecord(bg, drop)
	require.NoError(t, err)
	assert.Equal(t, OutcomeFailed, rec.Status)
	assert.Equal(t, CompletionProtocolError, rec.Completion)
	assert.Contains(t, rec.Error.Message, "poison "+drop)

	require.NoError(t, n.RetryDeadLetter(bg, byReq[keep].MessageID))
	dead, err = n.DeadLetters(bg, 0)
	require.NoError(t, err)
	assert.Empty(t, dead)
	un, err := st.GetUnacknowledgedMessages(bg, "client", "elsewhere")
	require.NoError(t, err)
	assert.Len(t, un, 1)
}

// EncodeEnvelope and DecodeEnvelope share one size bound; a send checks
// the payload against MaxPayloadBytes first.
func TestEnvelopeSizeBound(t *testing.T) {
	env := &Envelope{MessageID: newUUID(), SourceAgentID: "a", TargetAgentID: "b", Seq: 1, MessageType: MessageEvent,
		Timestamp: newFakeClock().Now(), Payload: json.RawMessage(`"` + strings.Repeat("x", MaxEnvelopeBytes) + `"`)}
	_, err := EncodeEnvelope(env)
	require.ErrorIs(t, err, ErrPayloadTooLarge)
	require.ErrorIs(t, err, ErrInvalidEnvelope)
	env.Payload = json.RawMessage(`"` + strings.Repeat("x", MaxPayloadBytes-2) + `"`)
	b, err := EncodeEnvelope(env)
	require.NoError(t, err, "the largest payload a send accepts fits an envelope")
	_, err = DecodeEnvelope(b)
	require.NoError(t, err)

	n, _, _ := manualNode(t, echoMux(nil), nil)
	_, err = n.SendRequest(bg, "client", "echo", jsontext.Value(`"`+strings.Repeat("x", MaxPayloadBytes-1)+`"`))
	require.ErrorIs(t, err, ErrPayloadTooLarge)
	_, err = n.SendRequest(bg, "client", "nobody", 1)
	require.ErrorIs(t, err, ErrUnknownAgent)
}
