package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPipeExchange(t *testing.T) {
	client, server := NewPipe(nil)
	assert.Equal(t, "memory", client.Kind())
	assert.Equal(t, "memory", server.Kind())
	ctx := context.Background()

	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	require.NoError(t, client.Write(ctx, msg))
	msg[0] = 'X' // Write copied it
	got, err := server.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, string(got))

	require.NoError(t, server.Write(ctx, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)))
	got, err = client.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(got))

	// Any bytes, including newlines and empty messages, pass unchanged.
	for _, m := range []string{"", "a\nb", "\x00"} {
		require.NoError(t, client.Write(ctx, []byte(m)))
		got, err := server.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, m, string(got))
	}
}

func TestPipeOrderAndBufferReuse(t *testing.T) {
	client, server := NewPipe(&PipeOptions{Capacity: 4})
	ctx := context.Background()
	const n = 1000
	go func() {
		for i := range n {
			if err := client.Write(ctx, fmt.Appendf(nil, "message %d %s", i, strings.Repeat("x", i%50))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range n {
		got, err := server.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("message %d %s", i, strings.Repeat("x", i%50)), string(got))
	}
}

func TestPipeConcurrentWriters(t *testing.T) {
	client, server := NewPipe(&PipeOptions{Capacity: 8})
	ctx := context.Background()
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := client.Write(ctx, fmt.Appendf(nil, "%d %d", g, i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); client.Close() }()
	next := make([]int, writers)
	total := 0
	for {
		got, err := server.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var g, i int
		_, err = fmt.Sscanf(string(got), "%d %d", &g, &i)
		require.NoError(t, err)
		require.Equal(t, next[g], i, "writer %d in order", g)
		next[g]++
		total++
	}
	assert.Equal(t, writers*each, total)
}

func TestPipeBackpressure(t *testing.T) {
	client, server := NewPipe(&PipeOptions{Capacity: 2})
	ctx := context.Background()
	require.NoError(t, client.Write(ctx, []byte("1")))
	require.NoError(t, client.Write(ctx, []byte("2")))

	// The server does not read: the third Write blocks until the deadline.
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	err := client.Write(dctx, []byte("3"))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, dctx.Err(), context.DeadlineExceeded, "Write returned only once the deadline had passed")

	// A blocked Write proceeds as soon as the peer reads.
	done := make(chan error)
	go func() { done <- client.Write(ctx, []byte("4")) }()
	got, err := server.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, "1", string(got))
	require.NoError(t, <-done)
	for _, want := range []string{"2", "4"} {
		got, err := server.Read(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
}

func TestPipeContext(t *testing.T) {
	client, server := NewPipe(nil)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := server.Read(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, client.Write(cancelled, []byte("x")), context.Canceled)

	// A blocked Read returns when its context is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := server.Read(ctx)
		done <- err
	}()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

func TestPipeClose(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		closeFirst string // "client" or "server"
	}{
		{"client closes", "client"},
		{"server closes", "server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := NewPipe(nil)
			closer, peer := client, server
			if tt.closeFirst == "server" {
				closer, peer = server, client
			}
			require.NoError(t, closer.Write(ctx, []byte("a")))
			require.NoError(t, closer.Write(ctx, []byte("b")))
			require.NoError(t, peer.Write(ctx, []byte("unread")))
			require.NoError(t, closer.Close())
			require.NoError(t, closer.Close(), "idempotent")

			// The peer drains what was sent, then sees EOF.
			got, err := readAll(t, peer)
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, []string{"a", "b"}, got)
			// The closer reads EOF at once.
			_, err = closer.Read(ctx)
			assert.ErrorIs(t, err, io.EOF)
			// Writes fail on both ends.
			assert.ErrorIs(t, closer.Write(ctx, []byte("x")), ErrClosed)
			assert.ErrorIs(t, peer.Write(ctx, []byte("x")), ErrClosed)
			require.NoError(t, peer.Close())
		})
	}
}

func TestPipeCloseUnblocks(t *testing.T) {
	ctx := context.Background()
	t.Run("read", func(t *testing.T) {
		client, server := NewPipe(nil)
		done := make(chan error)
		go func() {
			_, err := server.Read(ctx)
			done <- err
		}()
		require.NoError(t, client.Close())
		assert.ErrorIs(t, <-done, io.EOF)
	})
	t.Run("write", func(t *testing.T) {
		client, server := NewPipe(&PipeOptions{Capacity: 1})
		require.NoError(t, client.Write(ctx, []byte("1")))
		done := make(chan error)
		go func() { done <- client.Write(ctx, []byte("2")) }()
		require.NoError(t, server.Close())
		assert.ErrorIs(t, <-done, ErrClosed)
	})
}

func TestPipeMaxMessageBytes(t *testing.T) {
	client, server := NewPipe(&PipeOptions{MaxMessageBytes: 10})
	ctx := context.Background()
	for _, m := range []string{"0123456789", "0123456789A", "ok", strings.Repeat("z", 1000), "end"} {
		require.NoError(t, client.Write(ctx, []byte(m)))
	}
	require.NoError(t, client.Close())
	got, err := readAll(t, server)
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, []string{"0123456789", tooLarge(11), "ok", tooLarge(1000), "end"}, got)
}

func TestPipeNoAllocs(t *testing.T) {
	client, server := NewPipe(nil)
	ctx := context.Background()
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := client.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
		got, err := server.Read(ctx)
		if err != nil || len(got) != len(msg) {
			t.Fatalf("Read = %q, %v", got, err)
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkPipeRoundTrip(b *testing.B) {
	client, server := NewPipe(nil)
	ctx := context.Background()
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	go func() {
		for {
			m, err := server.Read(ctx)
			if err != nil {
				return
			}
			if server.Write(ctx, m) != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Write(ctx, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := client.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	client.Close()
}
