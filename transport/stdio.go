package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// stdioBufferSize is the size of the read and the write buffer of a Stdio.
const stdioBufferSize = 64 << 10

// ErrNewlineInMessage is returned by Stdio.Write for a message containing a
// raw newline byte, which would break newline-delimited framing. Compact JSON
// never contains one (newlines inside strings are escaped).
var ErrNewlineInMessage = errors.New("transport: message contains a newline byte")

// StdioOptions configures a Stdio transport. The zero value (or a nil
// *StdioOptions) selects the defaults.
type StdioOptions struct {
	// MaxMessageBytes limits one incoming line (without its line ending).
	// Zero or negative means DefaultMaxMessageBytes.
	MaxMessageBytes int
}

// Kinds reported by Stdio.Kind.
const (
	// KindStdio is the kind of a Stdio over the process's own standard
	// input and output (NewStdio): the peer is the process that launched
	// this one. Policies that trust local clients, such as the admin
	// policy local_stdio_only, admit this kind only.
	KindStdio = "stdio"
	// KindStream is the kind of a Stdio over any other reader and writer:
	// a socket, a pipe, a buffer. Nothing is known about who is at the
	// other end, so it is never taken for a local client.
	KindStream = "stream"
)

// Stdio is the newline-delimited stream transport used by a server that a
// client launches as a subprocess (and by a client talking to such a
// subprocess): each message is one line of compact JSON terminated by "\n".
// The same framing works over any byte stream (a Unix socket, a TCP
// connection, a pipe): NewStdioStreams serves one.
//
// Kind: a Stdio built over the process's own standard streams (NewStdio,
// or NewStdioStreams(os.Stdin, os.Stdout, ...)) reports KindStdio; over any
// other reader or writer it reports KindStream, so that serving the
// newline-delimited protocol on a socket does not pass for a local stdio
// client. The check is by identity, made when the Stdio is created: a
// wrapper around os.Stdin (a tee for debugging, say) is a stream too; a
// program that knows such a wrapper is local can wrap the transport and
// report the kind it vouches for. Note that a process whose standard
// streams its launcher connected to a network socket (inetd, socat) is
// exactly as remote as that launcher makes it: Kind cannot tell.
//
// Reading: Read returns each line without its "\n" or "\r\n" ending; blank
// lines are skipped; a final line without an ending is still returned before
// io.EOF. The returned slice points into the read buffer and is valid until
// the next Read. A line over MaxMessageBytes is discarded without being
// buffered and reported as a *MessageTooLargeError; the next Read continues
// with the following line.
//
// Writing: messages are appended to one 64 KiB buffer under a lock, so they
// are ordered and never interleaved. The buffer is flushed by the last of the
// writers that are pending at the same time, or, while more complete input
// lines are already buffered, by the next Read before it waits for input:
// concurrent and pipelined responses share write system calls, and a lone
// response to a lone request is flushed before its Write returns. A peer that does not read blocks the flush and thus every writer
// (backpressure; memory stays bounded by the buffer).
//
// Cancellation: reading from or writing to an io.Reader or io.Writer cannot
// be interrupted. Read and Write check ctx before they start, but a call
// blocked in the underlying stream returns only when the stream does.
// Close unblocks them where the streams allow it: it closes the reader and
// the writer if they implement io.Closer (os.File pipes, net.Conn,
// io.PipeReader, ...).
type Stdio struct {
	r    io.Reader
	w    io.Writer
	max  int
	kind string

	// Read side: used by one goroutine at a time.
	br   *bufio.Reader
	long []byte // reusable buffer for lines longer than br's buffer
	rerr error  // sticky end-of-input error

	// inputAhead is true while the read buffer holds another complete line:
	// the reader will be back at once, so writers leave the flush to it.
	inputAhead atomic.Bool

	// Write side.
	pending atomic.Int32 // writers that have started and not yet finished
	wmu     sync.Mutex
	bw      *bufio.Writer

	closed    atomic.Bool
	closeErr  error
	closeOnce sync.Once

	gone     chan struct{} // closed when a write fails: the output's reader is gone
	goneOnce sync.Once
}

var _ Transport = (*Stdio)(nil)

// NewStdio returns a Stdio transport over os.Stdin and os.Stdout. opts may be
// nil. Nothing but protocol messages must be written to os.Stdout while it is
// in use: send logs to os.Stderr.
func NewStdio(opts *StdioOptions) *Stdio {
	return NewStdioStreams(os.Stdin, os.Stdout, opts)
}

// NewStdioStreams returns a Stdio transport reading messages from r and
// writing them to w. opts may be nil. Close closes r and w if they implement
// io.Closer (once, when they are the same value). Its Kind is KindStdio
// when r is os.Stdin and w is os.Stdout, KindStream otherwise.
func NewStdioStreams(r io.Reader, w io.Writer, opts *StdioOptions) *Stdio {
	s := &Stdio{
		r:    r,
		w:    w,
		max:  DefaultMaxMessageBytes,
		kind: streamKind(r, w),
		br:   bufio.NewReaderSize(r, stdioBufferSize),
		bw:   bufio.NewWriterSize(w, stdioBufferSize),
		gone: make(chan struct{}),
	}
	if opts != nil && opts.MaxMessageBytes > 0 {
		s.max = opts.MaxMessageBytes
	}
	return s
}

// Kind returns KindStdio ("stdio") for a transport over the process's
// standard input and output, KindStream ("stream") for any other streams
// (see Stdio).
func (s *Stdio) Kind() string { return s.kind }

// MaxMessageBytes implements MessageLimiter: the limit on one incoming
// line (StdioOptions.MaxMessageBytes), which the server's answers keep to
// as well.
func (s *Stdio) MaxMessageBytes() int { return s.max }

// streamKind returns KindStdio when r and w are the process's standard
// input and output (the *os.File values os.Stdin and os.Stdout hold now),
// KindStream otherwise.
func streamKind(r io.Reader, w io.Writer) string {
	if f, ok := r.(*os.File); !ok || f == nil || f != os.Stdin {
		return KindStream
	}
	if f, ok := w.(*os.File); !ok || f == nil || f != os.Stdout {
		return KindStream
	}
	return KindStdio
}

// Read returns the next line without its line ending. See Stdio for the
// framing rules. It returns ctx.Err() if ctx is already done, io.EOF at the
// end of input and after Close.
func (s *Stdio) Read(ctx context.Context) ([]byte, error) {
	for {
		if s.closed.Load() {
			return nil, io.EOF
		}
		if s.rerr != nil {
			return nil, s.rerr
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !s.lineBuffered() {
			// About to wait for input: send what is buffered first.
			s.inputAhead.Store(false)
			s.flushBuffered()
		}
		line, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			var tooLarge error
			line, err, tooLarge = s.readLong(line)
			if tooLarge != nil {
				return nil, tooLarge
			}
		}
		if err != nil {
			if s.closed.Load() {
				err = io.EOF
			}
			s.rerr = err
		}
		line = trimEOL(line)
		if isBlank(line) {
			if err != nil {
				return nil, err
			}
			continue
		}
		if len(line) > s.max {
			return nil, &MessageTooLargeError{Limit: s.max, Size: len(line)}
		}
		s.inputAhead.Store(s.lineBuffered())
		return line, nil
	}
}

// lineBuffered reports whether the read buffer holds a complete line.
func (s *Stdio) lineBuffered() bool {
	n := s.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := s.br.Peek(n)
	return bytes.IndexByte(b, '\n') >= 0
}

// flushBuffered flushes output that writers left for the reader to flush.
// A flush error is sticky in the bufio.Writer: the next Write reports it.
func (s *Stdio) flushBuffered() {
	s.wmu.Lock()
	if s.bw.Buffered() > 0 && !s.closed.Load() {
		s.bw.Flush()
	}
	s.wmu.Unlock()
}

// readLong assembles a line longer than the read buffer into s.long, first
// being its first part, and returns it with the error that ended it. If the
// line exceeds the limit, the rest of it is read and discarded and tooLarge
// is a *MessageTooLargeError; an I/O error met meanwhile is kept for the next
// Read.
func (s *Stdio) readLong(first []byte) (line []byte, err, tooLarge error) {
	// A line of max bytes may carry up to two bytes of ending ("\r\n").
	limit := s.max + 2
	if len(first) > limit {
		return nil, nil, s.discard(0, first)
	}
	s.long = append(s.long[:0], first...)
	for err = bufio.ErrBufferFull; err == bufio.ErrBufferFull; {
		var part []byte
		part, err = s.br.ReadSlice('\n')
		if len(s.long)+len(part) > limit {
			n := len(s.long)
			s.long = s.long[:0]
			if err != bufio.ErrBufferFull {
				return nil, nil, s.finishDiscard(n+len(part), part, err)
			}
			return nil, nil, s.discard(n, part)
		}
		s.long = append(s.long, part...)
	}
	return s.long, err, nil
}

// discard reads and drops the rest of an oversized line: size bytes of it
// were consumed before part, which filled the read buffer.
func (s *Stdio) discard(size int, part []byte) error {
	size += len(part)
	err := bufio.ErrBufferFull
	for err == bufio.ErrBufferFull {
		part, err = s.br.ReadSlice('\n')
		size += len(part)
	}
	return s.finishDiscard(size, part, err)
}

// finishDiscard reports an oversized line of size bytes (line ending
// included) whose last part is last, ended by err.
func (s *Stdio) finishDiscard(size int, last []byte, err error) error {
	if n := len(last); n > 0 && last[n-1] == '\n' {
		size--
		if n > 1 && last[n-2] == '\r' {
			size--
		}
	}
	if err != nil {
		if s.closed.Load() {
			err = io.EOF
		}
		s.rerr = err
	}
	return &MessageTooLargeError{Limit: s.max, Size: size}
}

func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
		if n > 1 && line[n-2] == '\r' {
			line = line[:n-2]
		}
	}
	return line
}

// isBlank reports whether line holds only JSON whitespace.
func isBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// Write sends msg followed by "\n". msg must not contain a newline byte
// (ErrNewlineInMessage). See Stdio for the flush policy. It returns ErrClosed
// after Close, and the write error of the underlying stream (sticky) if one
// occurred.
func (s *Stdio) Write(ctx context.Context, msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		return ErrNewlineInMessage
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.pending.Add(1)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.pending.Add(-1)
	if s.closed.Load() {
		return ErrClosed
	}
	s.bw.Write(msg)
	if _, err := s.bw.Write(newline); err != nil {
		// bufio.Writer errors are sticky: every later Write fails too.
		return s.writeErr(err)
	}
	// The last of a group of concurrent writers flushes for all of them:
	// if another writer is waiting for the lock, it will flush (it cannot
	// have decremented the counter yet). While another complete request is
	// already buffered on the read side, the reader flushes instead, before
	// it next waits for input: pipelined responses share write system calls.
	if s.pending.Load() == 0 && !s.inputAhead.Load() {
		if err := s.bw.Flush(); err != nil {
			return s.writeErr(err)
		}
	}
	return nil
}

var newline = []byte{'\n'}

func (s *Stdio) writeErr(err error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.goneOnce.Do(func() { close(s.gone) })
	return err
}

// PeerGone returns a channel closed when a write fails (PeerWatcher): the
// reader of the output is gone (a broken pipe), so nothing written reaches
// the client any more. The end of the input alone does not close it: a
// client may close its side and still read the answers.
func (s *Stdio) PeerGone() <-chan struct{} { return s.gone }

// Close closes the transport: later Reads return io.EOF and later Writes
// ErrClosed. It flushes buffered output unless a writer is blocked in a
// flush, then closes the reader and the writer if they implement io.Closer,
// which unblocks pending calls where the stream supports it. Close is
// idempotent; it returns the errors met (joined) on every call.
func (s *Stdio) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		var errs []error
		if rc, ok := s.r.(io.Closer); ok {
			errs = append(errs, rc.Close())
		}
		if s.wmu.TryLock() {
			if err := s.bw.Flush(); err != nil && !errors.Is(err, os.ErrClosed) {
				errs = append(errs, err)
			}
			s.wmu.Unlock()
		}
		if wc, ok := s.w.(io.Closer); ok && !sameValue(s.r, s.w) {
			errs = append(errs, wc.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// sameValue reports whether a and b are the same comparable value.
func sameValue(a, b any) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
