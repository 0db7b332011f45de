package streamhttp

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSSEReader(t *testing.T) {
	in := ": comment\n" +
		"id: 1_0\nretry: 250\ndata:\n\n" + // priming
		"event: message\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" + // two data lines, CRLF
		"id: 1_2\ndata: x\n\n" +
		"data: unterminated"
	r := newSSEReader(strings.NewReader(in), 1<<10)
	ev, err := r.next()
	require.NoError(t, err)
	assert.Equal(t, sseEvent{id: "1_0", hasID: true, retry: 250 * time.Millisecond}, ev)
	ev, err = r.next()
	require.NoError(t, err)
	assert.Equal(t, "message", ev.name)
	assert.Equal(t, "{\"a\":\n1}", string(ev.data))
	ev, err = r.next()
	require.NoError(t, err)
	assert.Equal(t, "1_2", ev.id)
	_, err = r.next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "an unterminated event is not dispatched")

	_, err = newSSEReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 50).next()
	assert.ErrorIs(t, err, errEventTooLarge)
}

func TestMemoryEventStore(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryEventStore(&MemoryEventStoreOptions{MaxBytesPerSession: 10})
	replay := func(sess, stream string, after uint64) ([]string, error) {
		var got []string
		err := m.Replay(ctx, sess, stream, after, func(seq uint64, data []byte) error {
			got = append(got, string(data))
			return nil
		})
		return got, err
	}
	for i, d := range []string{"aaa", "bbb", "ccc"} {
		require.NoError(t, m.Append(ctx, "s", "1", uint64(i+1), []byte(d)))
	}
	got, err := replay("s", "1", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"bbb", "ccc"}, got)
	require.NoError(t, m.Append(ctx, "s", "2", 1, []byte("dddd"))) // 13 bytes: "aaa" evicted
	_, err = replay("s", "1", 0)
	assert.ErrorIs(t, err, ErrEventsLost)
	got, err = replay("s", "1", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"bbb", "ccc"}, got)
	got, err = replay("s", "1", 3)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = replay("s", "1", 4)
	assert.ErrorIs(t, err, ErrEventsLost, "an id never sent")
	got, err = replay("s", "9", 0)
	require.NoError(t, err, "a stream without events")
	assert.Empty(t, got)
	assert.Error(t, m.Append(ctx, "s", "2", 5, nil), "out of order")

	// The newest event is kept even when larger than the bound.
	require.NoError(t, m.Append(ctx, "s", "3", 1, []byte("0123456789abc")))
	got, err = replay("s", "3", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"0123456789abc"}, got)
	_, err = replay("s", "2", 0)
	assert.ErrorIs(t, err, ErrEventsLost)

	require.NoError(t, m.SessionClosed(ctx, "s"))
	_, err = replay("s", "3", 1)
	assert.ErrorIs(t, err, ErrEventsLost)
}

// FuzzSSEReader: any input yields events or an error, never a panic, and
// no event's data exceeds the limit.
func FuzzSSEReader(f *testing.F) {
	f.Add("id: 1_0\nretry: 10\ndata:\n\ndata: {}\n\n")
	f.Add(": c\r\nevent: x\r\ndata: a\r\ndata: b\r\n\r\n")
	f.Add("data: " + strings.Repeat("y", 70) + "\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := newSSEReader(strings.NewReader(in), 64)
		for range 1000 {
			ev, err := r.next()
			if err != nil {
				return
			}
			if len(ev.data) > 64 {
				t.Fatalf("event data of %d bytes over the limit", len(ev.data))
			}
		}
	})
}

// FuzzPeekOutgoing: classification never panics and agrees with itself.
func FuzzPeekOutgoing(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	f.Add(`[{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}]`)
	f.Add(`{"jsonrpc":"2.0","method":"m","params":{"id":2}}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, err := peekOutgoing([]byte(in))
		if err == nil && out.request && out.response && !strings.HasPrefix(strings.TrimSpace(in), "[") {
			t.Fatalf("one object both request and response: %q", in)
		}
	})
}

// FuzzResponseHead: the fast read of a response's id (responseHead) agrees
// with the full read for every valid message it accepts.
func FuzzResponseHead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":"a-1","error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, `{"jsonrpc":"2.0","id":-1.5e3,"result":[]}`,
		`{"jsonrpc":"2.0","id":"a\"b","result":{}}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		id, ok := responseHead([]byte(in))
		if !ok || !jsontext.Value(in).IsValid() {
			return
		}
		p := peekerPool.Get().(*peeker)
		p.r.Reset([]byte(in))
		p.dec.Reset(&p.r)
		full, err := peekDecode(&p.dec)
		peekerPool.Put(p)
		require.NoError(t, err, in)
		assert.True(t, full.response, in)
		if string(id) == "null" {
			assert.Empty(t, full.ids, in)
		} else {
			assert.Equal(t, []string{string(id)}, full.ids, in)
		}
	})
}
