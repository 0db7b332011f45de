package transport

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// DefaultPipeCapacity is the default number of messages a pipe direction
// holds before Write blocks.
const DefaultPipeCapacity = 64

// PipeOptions configures NewPipe. The zero value (or a nil *PipeOptions)
// selects the defaults.
type PipeOptions struct {
	// Capacity is the number of messages each direction buffers before
	// Write blocks. Zero or negative means DefaultPipeCapacity.
	Capacity int
	// MaxMessageBytes limits one message, enforced by the receiving end as
	// Stdio does: Read reports a *MessageTooLargeError and goes on with the
	// next message. Zero or negative means DefaultMaxMessageBytes.
	MaxMessageBytes int
}

// NewPipe returns the two ends of a connected in-memory transport (Kind
// "memory"), for tests: what one end writes the other reads, in order. opts
// may be nil.
//
// Each Write copies the message into a bounded queue of the peer; when the
// queue is full, Write blocks until the peer reads, ctx is done or the pipe
// is closed (backpressure). Read and Write return ctx.Err() when ctx is done
// first. Close on either end closes the pipe: Writes on both ends return
// ErrClosed, the closing end's Reads return io.EOF, and the other end reads
// what was already sent, then io.EOF. Messages are not checked for framing:
// any bytes may be sent.
func NewPipe(opts *PipeOptions) (client, server Transport) {
	capacity, max := DefaultPipeCapacity, DefaultMaxMessageBytes
	if opts != nil {
		if opts.Capacity > 0 {
			capacity = opts.Capacity
		}
		if opts.MaxMessageBytes > 0 {
			max = opts.MaxMessageBytes
		}
	}
	p := &pipe{done: make(chan struct{})}
	a := newPipeQueue(capacity) // client → server
	b := newPipeQueue(capacity) // server → client
	c := &pipeEnd{p: p, in: b, out: a, max: max}
	s := &pipeEnd{p: p, in: a, out: b, max: max}
	return c, s
}

// pipe is the state shared by both ends.
type pipe struct {
	once sync.Once
	done chan struct{} // closed by Close on either end
}

func (p *pipe) close() { p.once.Do(func() { close(p.done) }) }

// pipeQueue is one direction: the messages and a free list of buffers the
// reader has finished with, so that steady-state traffic allocates nothing.
type pipeQueue struct {
	msgs chan []byte
	free chan []byte
}

func newPipeQueue(capacity int) *pipeQueue {
	return &pipeQueue{
		msgs: make(chan []byte, capacity),
		free: make(chan []byte, capacity+2),
	}
}

// maxRecycled bounds the size of a buffer kept on a free list.
const maxRecycled = 64 << 10

func (q *pipeQueue) recycle(buf []byte) {
	if buf == nil || cap(buf) > maxRecycled {
		return
	}
	select {
	case q.free <- buf[:0]:
	default:
	}
}

func (q *pipeQueue) copyOf(msg []byte) []byte {
	var buf []byte
	select {
	case buf = <-q.free:
	default:
	}
	if buf == nil && len(msg) == 0 {
		return []byte{}
	}
	return append(buf, msg...)
}

// pipeEnd is one end of a pipe.
type pipeEnd struct {
	p      *pipe
	in     *pipeQueue // messages to this end
	out    *pipeQueue // messages to the peer
	max    int
	closed atomic.Bool // this end was closed
	last   []byte      // message returned by the previous Read (owned until the next)
}

// Kind returns "memory".
func (e *pipeEnd) Kind() string { return "memory" }

// MaxMessageBytes implements MessageLimiter: the pipe's MaxMessageBytes.
func (e *pipeEnd) MaxMessageBytes() int { return e.max }

// Read returns the next message from the peer.
func (e *pipeEnd) Read(ctx context.Context) ([]byte, error) {
	e.in.recycle(e.last)
	e.last = nil
	if e.closed.Load() {
		return nil, io.EOF
	}
	var msg []byte
	select {
	case msg = <-e.in.msgs:
	default:
		select {
		case msg = <-e.in.msgs:
		case <-e.p.done:
			// Closed: drain what was already sent, then EOF.
			select {
			case msg = <-e.in.msgs:
			default:
				return nil, io.EOF
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if len(msg) > e.max {
		e.in.recycle(msg)
		return nil, &MessageTooLargeError{Limit: e.max, Size: len(msg)}
	}
	e.last = msg
	return msg, nil
}

// Write copies msg into the peer's queue.
func (e *pipeEnd) Write(ctx context.Context, msg []byte) error {
	select {
	case <-e.p.done:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	buf := e.out.copyOf(msg)
	select {
	case e.out.msgs <- buf:
		return nil
	default:
	}
	select {
	case e.out.msgs <- buf:
		return nil
	case <-e.p.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PeerGone returns a channel closed when either end is closed
// (PeerWatcher): after that nothing written reaches the peer.
func (e *pipeEnd) PeerGone() <-chan struct{} { return e.p.done }

// Close closes the pipe (both ends).
func (e *pipeEnd) Close() error {
	e.closed.Store(true)
	e.p.close()
	return nil
}
