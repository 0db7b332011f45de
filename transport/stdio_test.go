package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tooLarge is how readAll reports a *MessageTooLargeError of Size n.
func tooLarge(n int) string { return fmt.Sprintf("<too large: %d>", n) }

// readAll reads t until an error other than *MessageTooLargeError and
// returns what it read, that error included.
func readAll(t *testing.T, tr Transport) ([]string, error) {
	t.Helper()
	var got []string
	for i := 0; i < 1000; i++ {
		msg, err := tr.Read(context.Background())
		var mte *MessageTooLargeError
		switch {
		case errors.As(err, &mte):
			assert.Greater(t, mte.Size, mte.Limit)
			got = append(got, tooLarge(mte.Size))
		case err != nil:
			return got, err
		default:
			got = append(got, string(msg))
		}
	}
	t.Fatal("no end of input")
	return nil, nil
}

func TestStdioReadFraming(t *testing.T) {
	long := strings.Repeat("x", 70<<10) // longer than the 64 KiB read buffer
	huge := strings.Repeat("y", 140<<10)
	tests := []struct {
		name  string
		in    string
		max   int
		want  []string
		final error
	}{
		{name: "empty input", in: "", want: nil},
		{name: "LF lines", in: "a\nbb\nccc\n", want: []string{"a", "bb", "ccc"}},
		{name: "CRLF lines", in: "a\r\nbb\r\n", want: []string{"a", "bb"}},
		{name: "mixed endings", in: "a\r\nb\nc\r\n", want: []string{"a", "b", "c"}},
		{name: "blank lines skipped", in: "\n\r\n  \n\t\r\na\n\n\nb\n\r\n", want: []string{"a", "b"}},
		{name: "only blank lines", in: "\n\n\r\n", want: nil},
		{name: "final unterminated line", in: "a\nlast", want: []string{"a", "last"}},
		{name: "final unterminated CR kept", in: "a\nlast\r", want: []string{"a", "last\r"}},
		{name: "inner CR kept", in: "a\rb\n", want: []string{"a\rb"}},
		{name: "long line assembled", in: "a\n" + long + "\nb\n", want: []string{"a", long, "b"}},
		{name: "long CRLF line", in: long + "\r\n", want: []string{long}},
		{name: "long final unterminated line", in: "a\n" + long, want: []string{"a", long}},
		{name: "oversize short line then normal", in: "0123456789A\nok\n", max: 10,
			want: []string{tooLarge(11), "ok"}},
		{name: "exactly max", in: "0123456789\n0123456789\r\n", max: 10,
			want: []string{"0123456789", "0123456789"}},
		{name: "max plus one with CRLF", in: "0123456789A\r\nok\n", max: 10,
			want: []string{tooLarge(11), "ok"}},
		{name: "oversize final unterminated", in: "ok\n0123456789A", max: 10,
			want: []string{"ok", tooLarge(11)}},
		{name: "oversize long line discarded", in: "a\n" + huge + "\nb\n", max: 80 << 10,
			want: []string{"a", tooLarge(len(huge)), "b"}},
		{name: "oversize long CRLF line", in: huge + "\r\nb\r\n", max: 80 << 10,
			want: []string{tooLarge(len(huge)), "b"}},
		{name: "oversize with small max", in: long + "\n" + "b\n", max: 1000,
			want: []string{tooLarge(len(long)), "b"}},
		{name: "oversize long unterminated", in: "a\n" + huge, max: 80 << 10,
			want: []string{"a", tooLarge(len(huge))}},
		{name: "oversize just over the buffer", in: long + "z\nb\n", max: len(long),
			want: []string{tooLarge(len(long) + 1), "b"}},
		{name: "long at exactly max", in: long + "\r\nb\n", max: len(long),
			want: []string{long, "b"}},
		{name: "two oversize in a row", in: huge + "\n" + huge + "\nc\n", max: 80 << 10,
			want: []string{tooLarge(len(huge)), tooLarge(len(huge)), "c"}},
	}
	readers := map[string]func(string) io.Reader{
		"plain":    func(s string) io.Reader { return strings.NewReader(s) },
		"onebyte":  func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"halfread": func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"dataerr":  func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				s := NewStdioStreams(mk(tt.in), io.Discard, &StdioOptions{MaxMessageBytes: tt.max})
				got, err := readAll(t, s)
				require.ErrorIs(t, err, io.EOF)
				assert.Equal(t, tt.want, got)
				// EOF is sticky.
				_, err = s.Read(context.Background())
				assert.ErrorIs(t, err, io.EOF)
			})
		}
	}
}

func TestStdioReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom))
	s := NewStdioStreams(r, io.Discard, nil)
	got, err := readAll(t, s)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"a", "b"}, got)
}

func TestStdioDefaults(t *testing.T) {
	s := NewStdio(nil)
	assert.Equal(t, "stdio", s.Kind())
	assert.Equal(t, DefaultMaxMessageBytes, s.max)
	assert.Same(t, os.Stdin, s.r.(*os.File))
	assert.Same(t, os.Stdout, s.w.(*os.File))
	s = NewStdioStreams(strings.NewReader(""), io.Discard, &StdioOptions{MaxMessageBytes: -1})
	assert.Equal(t, DefaultMaxMessageBytes, s.max)
}

// TestStdioKind: only the process's own standard streams are "stdio"; the
// same framing over a socket, a pipe or a buffer is "stream", so a policy
// trusting local stdio clients cannot be reached through a socket.
func TestStdioKind(t *testing.T) {
	sock, peer := net.Pipe()
	defer sock.Close()
	defer peer.Close()
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	tests := []struct {
		name string
		s    *Stdio
		want string
	}{
		{"NewStdio", NewStdio(nil), KindStdio},
		{"os.Stdin and os.Stdout", NewStdioStreams(os.Stdin, os.Stdout, nil), KindStdio},
		{"net.Conn", NewStdioStreams(sock, sock, nil), KindStream},
		{"os.Pipe files", NewStdioStreams(pr, pw, nil), KindStream},
		{"os.Stdin and another writer", NewStdioStreams(os.Stdin, io.Discard, nil), KindStream},
		{"another reader and os.Stdout", NewStdioStreams(strings.NewReader(""), os.Stdout, nil), KindStream},
		{"os.Stdout and os.Stdin swapped", NewStdioStreams(os.Stdout, os.Stdin, nil), KindStream},
		{"wrapped os.Stdin", NewStdioStreams(bufio.NewReader(os.Stdin), os.Stdout, nil), KindStream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.s.Kind()) })
	}
	assert.Equal(t, "stdio", KindStdio)
	assert.Equal(t, "stream", KindStream)
}

func TestStdioReadContext(t *testing.T) {
	s := NewStdioStreams(strings.NewReader("a\n"), io.Discard, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Read(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	// The line is still there for a live context.
	msg, err := s.Read(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "a", string(msg))
}

func TestStdioReadNoAllocs(t *testing.T) {
	const runs = 2000
	tests := []struct {
		name string
		line string
	}{
		{"short lines", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		{"short CRLF lines", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r"},
		{"long lines", strings.Repeat("z", 100<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in bytes.Buffer
			n := runs + 10
			if len(tt.line) > 1000 {
				n = 60
			}
			for range n {
				in.WriteString(tt.line)
				in.WriteByte('\n')
			}
			s := NewStdioStreams(bytes.NewReader(in.Bytes()), io.Discard, nil)
			ctx := context.Background()
			want := strings.TrimSuffix(tt.line, "\r")
			allocs := testing.AllocsPerRun(n-2, func() {
				msg, err := s.Read(ctx)
				if err != nil || string(msg) != want {
					t.Fatalf("Read = %.20q, %v", msg, err)
				}
			})
			assert.Zero(t, allocs)
		})
	}
}

// recWriter records each Write call (a "syscall") and can hold writes until
// released.
type recWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	calls   int
	entered chan struct{} // if non-nil, receives a value when a Write starts
	gate    chan struct{} // if non-nil, each Write waits until it is closed
	closed  bool
	err     error
}

func (w *recWriter) Write(p []byte) (int, error) {
	if w.entered != nil {
		select {
		case w.entered <- struct{}{}:
		default:
		}
	}
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.calls++
	return w.buf.Write(p)
}

func (w *recWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

func (w *recWriter) snapshot() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String(), w.calls
}

func TestStdioWriteSingleFlushedAtOnce(t *testing.T) {
	w := &recWriter{}
	s := NewStdioStreams(strings.NewReader(""), w, nil)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		require.NoError(t, s.Write(ctx, []byte(fmt.Sprintf(`{"id":%d}`, i))))
		out, calls := w.snapshot()
		assert.Equal(t, i, calls, "a lone write is flushed before Write returns")
		assert.True(t, strings.HasSuffix(out, fmt.Sprintf("{\"id\":%d}\n", i)))
	}
}

func TestStdioWriteFlushBatching(t *testing.T) {
	const writers = 16
	w := &recWriter{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	s := NewStdioStreams(strings.NewReader(""), w, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	// The first writer blocks in its flush (slow peer)...
	wg.Add(1)
	go func() { defer wg.Done(); errs <- s.Write(ctx, []byte(`{"n":0}`)) }()
	<-w.entered
	// ...and the others pile up behind it.
	for i := 1; i < writers; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- s.Write(ctx, fmt.Appendf(nil, `{"n":%d}`, i)) }()
	}
	for s.pending.Load() != writers-1 {
		time.Sleep(time.Millisecond)
	}
	close(w.gate) // the peer reads again
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	out, calls := w.snapshot()
	assert.Equal(t, 2, calls, "the first flush, then one for the %d pipelined writes", writers-1)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Len(t, lines, writers)
	assert.Equal(t, `{"n":0}`, lines[0])
}

func TestStdioWriteConcurrentOrdered(t *testing.T) {
	const writers, each = 8, 150
	w := &recWriter{}
	s := NewStdioStreams(strings.NewReader(""), w, nil)
	ctx := context.Background()
	pad := strings.Repeat("p", 500) // so that the 64 KiB buffer fills up now and then
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.Write(ctx, fmt.Appendf(nil, `{"g":%d,"i":%d,"pad":"%s"}`, g, i, pad)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	out, calls := w.snapshot()
	t.Logf("%d writes, %d write calls", writers*each, calls)
	assert.LessOrEqual(t, calls, writers*each)
	next := make([]int, writers)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var g, i int
		var p string
		_, err := fmt.Sscanf(sc.Text(), `{"g":%d,"i":%d,"pad":"%s`, &g, &i, &p)
		require.NoError(t, err, "line %q", sc.Text())
		require.Equal(t, pad+`"}`, p, "line intact")
		require.Equal(t, next[g], i, "writer %d in order", g)
		next[g]++
		n++
	}
	assert.Equal(t, writers*each, n)
}

func TestStdioWriteRejectsNewline(t *testing.T) {
	w := &recWriter{}
	s := NewStdioStreams(strings.NewReader(""), w, nil)
	for _, msg := range []string{"a\nb", "\n", "{}\n"} {
		assert.ErrorIs(t, s.Write(context.Background(), []byte(msg)), ErrNewlineInMessage)
	}
	out, calls := w.snapshot()
	assert.Empty(t, out)
	assert.Zero(t, calls)
}

func TestStdioWriteContext(t *testing.T) {
	w := &recWriter{}
	s := NewStdioStreams(strings.NewReader(""), w, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, s.Write(ctx, []byte(`{}`)), context.Canceled)
	out, _ := w.snapshot()
	assert.Empty(t, out)
}

func TestStdioWriteErrorSticky(t *testing.T) {
	boom := errors.New("broken pipe")
	w := &recWriter{err: boom}
	s := NewStdioStreams(strings.NewReader(""), w, nil)
	assert.ErrorIs(t, s.Write(context.Background(), []byte(`{}`)), boom)
	w.mu.Lock()
	w.err = nil
	w.mu.Unlock()
	assert.ErrorIs(t, s.Write(context.Background(), []byte(`{}`)), boom)
}

func TestStdioClose(t *testing.T) {
	t.Run("reads and writes after close", func(t *testing.T) {
		r := io.NopCloser(strings.NewReader("a\nb\n"))
		w := &recWriter{}
		s := NewStdioStreams(r, w, nil)
		msg, err := s.Read(context.Background())
		require.NoError(t, err)
		assert.Equal(t, "a", string(msg))
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "idempotent")
		assert.True(t, w.closed, "writer closed")
		_, err = s.Read(context.Background())
		assert.ErrorIs(t, err, io.EOF)
		assert.ErrorIs(t, s.Write(context.Background(), []byte(`{}`)), ErrClosed)
	})
	t.Run("unblocks a read", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		s := NewStdioStreams(pr, io.Discard, nil)
		done := make(chan error)
		go func() {
			_, err := s.Read(context.Background())
			done <- err
		}()
		require.NoError(t, s.Close())
		assert.ErrorIs(t, <-done, io.EOF)
	})
	t.Run("unblocks a writer blocked on a slow peer", func(t *testing.T) {
		w := &stuckWriter{entered: make(chan struct{}, 1), closed: make(chan struct{})}
		s := NewStdioStreams(strings.NewReader(""), w, nil)
		done := make(chan error, 2)
		go func() { done <- s.Write(context.Background(), []byte(`{"a":1}`)) }()
		<-w.entered // blocked in the flush
		go func() { done <- s.Write(context.Background(), []byte(`{"a":2}`)) }()
		for s.pending.Load() != 1 {
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, s.Close())
		assert.ErrorIs(t, <-done, ErrClosed)
		assert.ErrorIs(t, <-done, ErrClosed)
	})
	t.Run("flushes and closes a shared stream once", func(t *testing.T) {
		c := &closeCounter{}
		s := NewStdioStreams(c, c, nil)
		require.NoError(t, s.Close())
		assert.Equal(t, 1, c.n)
	})
}

// stuckWriter is a peer that never reads: Write blocks until Close.
type stuckWriter struct {
	entered chan struct{}
	closed  chan struct{}
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.entered <- struct{}{}
	<-w.closed
	return 0, io.ErrClosedPipe
}

func (w *stuckWriter) Close() error { close(w.closed); return nil }

type closeCounter struct{ n int }

func (c *closeCounter) Read([]byte) (int, error)    { return 0, io.EOF }
func (c *closeCounter) Write(p []byte) (int, error) { return len(p), nil }
func (c *closeCounter) Close() error                { c.n++; return nil }

// TestStdioOSPipe runs two Stdio ends over OS pipes, as a client and a
// subprocess server do.
func TestStdioOSPipe(t *testing.T) {
	r1, w1, err := os.Pipe()
	require.NoError(t, err)
	r2, w2, err := os.Pipe()
	require.NoError(t, err)
	// The client's two directions are separate transports here, so that
	// closing the writing one (EOF for the server) leaves reading open; its
	// Close flushes first.
	client := NewStdioStreams(r2, io.Discard, nil)
	clientOut := NewStdioStreams(strings.NewReader(""), w1, nil)
	server := NewStdioStreams(r1, w2, nil)
	ctx := context.Background()
	const n = 500
	go func() {
		for {
			msg, err := server.Read(ctx)
			if err != nil {
				server.Close()
				return
			}
			if err := server.Write(ctx, append([]byte(`{"echo":`), append(msg, '}')...)); err != nil {
				return
			}
		}
	}()
	go func() {
		for i := range n {
			if err := clientOut.Write(ctx, fmt.Appendf(nil, "%d", i)); err != nil {
				t.Error(err)
				return
			}
		}
		clientOut.Close() // flush, then EOF for the server
	}()
	for i := range n {
		msg, err := client.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf(`{"echo":%d}`, i), string(msg))
	}
	_, err = client.Read(ctx)
	assert.ErrorIs(t, err, io.EOF)
	require.NoError(t, r2.Close())
}

func BenchmarkStdioRead(b *testing.B) {
	line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}` + "\n"
	data := []byte(strings.Repeat(line, 4096))
	r := bytes.NewReader(data)
	s := NewStdioStreams(r, io.Discard, nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := s.Read(ctx); err != nil {
			r.Reset(data)
			s.br.Reset(r)
			s.rerr = nil
		}
	}
}

func BenchmarkStdioWrite(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	s := NewStdioStreams(strings.NewReader(""), io.Discard, nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Write(ctx, msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
