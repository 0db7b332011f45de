package transport

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Responses to pipelined requests share write system calls: while another
// complete request is already buffered, Write leaves the flush to the next
// Read, which flushes before it waits for more input. A response to a lone
// request is flushed at once.
func TestStdioFlushDeferredWhileInputBuffered(t *testing.T) {
	w := &recWriter{}
	in := strings.NewReader("{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n")
	s := NewStdioStreams(io.NopCloser(in), w, nil)
	ctx := context.Background()

	for i := 0; i < 3; i++ {
		msg, err := s.Read(ctx)
		require.NoError(t, err)
		require.NoError(t, s.Write(ctx, msg))
		w.mu.Lock()
		calls := w.calls
		w.mu.Unlock()
		if i < 2 {
			require.Zero(t, calls, "response %d flushed although more input was buffered", i+1)
		} else {
			require.Equal(t, 1, calls, "the last response is flushed at once, together with the earlier ones")
		}
	}
	w.mu.Lock()
	require.Equal(t, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n", w.buf.String())
	w.mu.Unlock()
	_, err := s.Read(ctx)
	require.ErrorIs(t, err, io.EOF)
}

// A writer other than the reader (a response from a long call) that writes
// while input is buffered is flushed by the reader before it blocks.
func TestStdioReaderFlushesBeforeBlocking(t *testing.T) {
	w := &recWriter{}
	pr, pw := io.Pipe()
	s := NewStdioStreams(pr, w, nil)
	ctx := context.Background()
	go func() { pw.Write([]byte("{\"id\":1}\n{\"id\":2}\n")) }()

	_, err := s.Read(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Write(ctx, []byte(`{"late":true}`))) // input still buffered: not flushed
	w.mu.Lock()
	require.Zero(t, w.calls)
	w.mu.Unlock()
	_, err = s.Read(ctx) // the buffered {"id":2}: still nothing to wait for
	require.NoError(t, err)

	done := make(chan struct{})
	go func() { // this Read has to wait for input: it flushes first
		defer close(done)
		_, err := s.Read(ctx)
		require.ErrorIs(t, err, io.EOF)
	}()
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.calls == 1 && w.buf.String() == "{\"late\":true}\n"
	}, 5*time.Second, time.Millisecond)
	pw.Close()
	<-done
}
