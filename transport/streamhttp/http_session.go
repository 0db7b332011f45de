package streamhttp

import (
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/transport"
)

// inbound is one POSTed message (or batch) waiting to be read, with the
// values of its HTTP request and the stream its responses go to.
type inbound struct {
	msg    []byte
	values context.Context
	stream *stream
	env    *envelope // msg as parseIncoming read it (nil for a message the session made itself)
}

// httpSession is one MCP session of a Handler and the transport.Transport its
// Serve call reads from and writes to.
type httpSession struct {
	h *Handler

	ctx    context.Context    // Serve's context
	cancel context.CancelFunc // nil: ctx is the POST's, and inPOST.Abort ends the request
	// inPOST is the hand-off of the one message of a session served in
	// its POST (nil for any other session): close aborts it.
	inPOST *handoff.Request

	in        chan inbound  // nil in a session served in its POST (newHTTPSession)
	eof       chan struct{} // closed when the input ends (Read returns io.EOF); nil as in
	eofOnce   sync.Once
	done      chan struct{} // closed when the session ends; made on first use (doneChan; guarded by mu)
	closeOnce sync.Once
	cur       inbound // the message Read returned last (reader-owned)
	// curCtx, if not nil, is room for the next MessageContext (an
	// ephemeral session's, allocated with it; reader-owned).
	curCtx *msgContext

	mu      sync.Mutex
	closed  bool
	listen  bool       // serves one modern subscriptions/listen request
	pending pendingSet // unanswered request id → stream

	// rev2025 is what only a session of the 2025 rules has: an
	// Mcp-Session-Id, timers, resumable streams, a GET stream (guarded by
	// mu). It is empty in a build without those rules (keel_omit2025).
	rev2025 sessionRev2025
}

var (
	_ transport.Transport        = (*httpSession)(nil)
	_ transport.MessageContexter = (*httpSession)(nil)
	_ handoff.Carrier            = (*httpSession)(nil)
)

// newHTTPSession makes a session, with room for inCap messages waiting to
// be read. A session with inPOST, the hand-off of a POST's one message,
// serves that message on the POST's goroutine (Options.ServeRequest): it
// has no input to Read, and its context is parent, the POST's, when
// ServeRequest is mcp's (which registers with inPOST.OnAbort what ends the
// request, and close aborts it), else derives from it.
func (h *Handler) newHTTPSession(parent context.Context, inPOST *handoff.Request, inCap int) *httpSession {
	s := new(httpSession)
	h.initHTTPSession(s, parent, inPOST, inCap)
	return s
}

// initHTTPSession makes s, a zero httpSession, the session newHTTPSession
// describes (an ephemeral session is allocated with its stream).
func (h *Handler) initHTTPSession(s *httpSession, parent context.Context, inPOST *handoff.Request, inCap int) {
	ctx, cancel := parent, context.CancelFunc(nil)
	if inPOST == nil || !h.opts.serveRequestAborts {
		ctx, cancel = context.WithCancel(parent)
	} // else: the POST's context ends the request, close ends it through inPOST.Abort
	s.h, s.ctx, s.cancel, s.inPOST = h, ctx, cancel, inPOST
	if inPOST == nil {
		s.in, s.eof = make(chan inbound, inCap), make(chan struct{})
	}
}

// pendingSet maps the unanswered request ids of a session to their
// streams. The first id is held without a map, which is made only for a
// second one (a session served in its POST has one request).
type pendingSet struct {
	oneID string
	one   *stream // nil: oneID is unused
	more  map[string]*stream
}

// get returns the stream of id, or nil.
func (p *pendingSet) get(id string) *stream {
	if p.one != nil && p.oneID == id {
		return p.one
	}
	return p.more[id]
}

// put records the stream of id, which is not in p.
func (p *pendingSet) put(id string, st *stream) {
	if p.one == nil {
		p.oneID, p.one = id, st
		return
	}
	if p.more == nil {
		p.more = map[string]*stream{}
	}
	p.more[id] = st
}

// remove forgets id.
func (p *pendingSet) remove(id string) {
	if p.one != nil && p.oneID == id {
		p.oneID, p.one = "", nil
		return
	}
	delete(p.more, id)
}

// removeStream forgets the ids of st and returns how many there were.
func (p *pendingSet) removeStream(st *stream) int {
	n := 0
	if p.one == st {
		p.oneID, p.one = "", nil
		n++
	}
	for id, q := range p.more {
		if q == st {
			delete(p.more, id)
			n++
		}
	}
	return n
}

// len returns how many ids p holds.
func (p *pendingSet) len() int {
	n := len(p.more)
	if p.one != nil {
		n++
	}
	return n
}

// clear forgets every id.
func (p *pendingSet) clear() {
	p.oneID, p.one = "", nil
	clear(p.more)
}

// Kind returns "http".
func (s *httpSession) Kind() string { return "http" }

// MaxMessageBytes implements transport.MessageLimiter: a session sends no
// message larger than the HTTP client transport accepts by default
// (transport.DefaultMaxMessageBytes), or than it accepts itself
// (Options.MaxBodyBytes) when that is larger. A smaller MaxBodyBytes bounds
// requests only.
func (s *httpSession) MaxMessageBytes() int {
	return max(int(s.h.opts.MaxBodyBytes), transport.DefaultMaxMessageBytes)
}

// Read returns the next message POSTed to the session.
func (s *httpSession) Read(ctx context.Context) ([]byte, error) {
	s.cur = inbound{}
	select {
	case m := <-s.in:
		s.cur = m
		return m.msg, nil
	default:
	}
	select {
	case m := <-s.in:
		s.cur = m
		return m.msg, nil
	case <-s.eof:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Handoff implements handoff.Carrier: the hand-off of the message Read
// returned last (or of the one a session served in its POST hands to
// Options.ServeRequest), as parseIncoming read it, so that the server does
// not read it again and tells the session its answer's error code; nil for
// a batch, and for a message the session made itself. The POST's body is
// its own: the message's bytes never change.
func (s *httpSession) Handoff() *handoff.Request { return s.cur.env.handoff() }

// MessageContext implements transport.MessageContexter: parent overlaid with the
// values of the HTTP request that carried the last message read, and the
// stream its responses and related messages go to.
func (s *httpSession) MessageContext(parent context.Context) context.Context {
	if s.cur.values == nil && s.cur.stream == nil {
		return parent
	}
	c := s.curCtx
	if c == nil {
		c = new(msgContext)
	}
	s.curCtx = nil // used once
	*c = msgContext{Context: parent, values: s.cur.values, stream: s.cur.stream}
	return c
}

// Write routes msg to exactly one stream: a response to the stream of the
// POST that carried its request; a request or notification written with a
// context carrying a request's stream (see transport.MessageContexter) to that
// stream while it is open; anything else to the standalone (GET) stream.
func (s *httpSession) Write(ctx context.Context, msg []byte) error {
	if s.isClosed() {
		return transport.ErrClosed
	}
	var one [1]string // room for a response's id (peekWritten)
	out, err := peekWritten(msg, &one)
	if err != nil {
		return err
	}
	if out.response {
		st, n := s.route(out.ids, msg)
		if st == nil && len(out.ids) == 0 {
			// An answer without an id (the refusal of a whole batch, say)
			// answers every request of the POST whose message it refuses.
			st, n = s.routeAll(ctx)
		}
		if st == nil {
			s.h.log.Debug("transport: response to an unknown or cancelled request dropped", "session", s.sessionID())
			return nil
		}
		return st.send(msg, n, st.errorCode())
	}
	if st, _ := ctx.Value(streamKey{}).(*stream); st != nil && st.sess == s && !st.standalone() {
		if err := st.send(msg, 0, 0); err != errStreamFinished && err != errNoRelated {
			return err
		}
	}
	return s.sendStandalone(msg, out.request)
}

// route finds the stream of the requests that ids answer and forgets them.
func (s *httpSession) route(ids []string, msg []byte) (*stream, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st *stream
	n := 0
	for _, id := range ids {
		if p := s.pending.get(id); p != nil {
			if st == nil {
				st = p
			}
			if p == st {
				s.pending.remove(id)
				n++
			}
		}
		s.rev2025.answeredLocked(id, msg)
	}
	if n > 0 {
		s.h.inflight.Add(int64(-n))
	}
	return st, n
}

// routeAll finds the stream of the POST whose message is being handled
// (the one ctx names, see MessageContext) and forgets all of its
// unanswered requests: one answer without an id answers them all.
func (s *httpSession) routeAll(ctx context.Context) (*stream, int) {
	st, _ := ctx.Value(streamKey{}).(*stream)
	if st == nil || st.sess != s || st.standalone() {
		return nil, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.pending.removeStream(st)
	if n == 0 {
		return nil, 0
	}
	s.h.inflight.Add(int64(-n))
	return st, n
}

// Close ends the session (as DELETE does).
func (s *httpSession) Close() error {
	s.close()
	return nil
}

// close ends the session: Serve's context is cancelled, Read returns
// io.EOF, streams end and later requests get 404.
func (s *httpSession) close() {
	s.closeOnce.Do(func() {
		s.h.removeSession(s)
		s.mu.Lock()
		s.closed = true
		n := s.pending.len()
		s.pending.clear()
		s.rev2025.endLocked()
		done := s.done
		s.mu.Unlock()
		s.h.inflight.Add(int64(-n))
		if done != nil {
			close(done)
		}
		s.endInput()
		if s.cancel != nil {
			s.cancel()
		}
		if s.inPOST != nil {
			s.inPOST.Abort()
		}
		s.releaseEvents()
	})
}

// noStandaloneStream is what Write does with a message that no stream
// carries: a request fails with ErrNoStream, a notification is dropped.
func (s *httpSession) noStandaloneStream(request bool) error {
	if request {
		return ErrNoStream
	}
	s.h.log.Debug("transport: notification dropped: no GET stream is open", "session", s.sessionID())
	return nil
}

func (s *httpSession) endInput() {
	if s.eof != nil { // nil: a session served in its POST has no input
		s.eofOnce.Do(func() { close(s.eof) })
	}
}

// newStream registers a stream for the requests ids (raw); a duplicate of
// an unanswered request id is refused (its response could not be routed).
// into, if not nil, is the zero stream to use (see ephemeral).
func (s *httpSession) newStream(ids []string, into *stream) (*stream, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range ids {
		if s.pending.get(id) != nil {
			return nil, id
		}
		for _, prev := range ids[:i] {
			if prev == id {
				return nil, id
			}
		}
	}
	st := into
	if st == nil {
		st = new(stream)
	}
	initStream(st, s)
	st.pending = len(ids)
	for _, id := range ids {
		s.pending.put(id, st)
	}
	s.h.inflight.Add(int64(len(ids)))
	s.addStreamLocked(st)
	return st, ""
}

// deliver queues a POSTed message for Read, with its reading (env).
func (s *httpSession) deliver(r *http.Request, env *envelope, msg []byte, st *stream) bool {
	m := inbound{msg: msg, values: context.WithoutCancel(r.Context()), stream: st, env: env}
	select {
	case s.in <- m:
		return true
	case <-s.doneChan():
	case <-s.eof:
	case <-r.Context().Done():
	}
	return false
}
