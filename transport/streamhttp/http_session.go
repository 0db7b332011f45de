package streamhttp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
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
	h         *Handler
	id        string // "" in stateless mode
	subject   string // authenticated user the session is bound to ("" = none)
	peer      string // key of the peer that created it (MaxSessionsPerPeer)
	stateless bool
	listen    bool // serves one modern subscriptions/listen request

	ctx    context.Context    // Serve's context
	cancel context.CancelFunc // nil: ctx is the POST's, and abort ends the request
	abort  func()             // see OnAbort (guarded by mu)

	in        chan inbound  // nil in a session served in its POST (newHTTPSession)
	eof       chan struct{} // closed when the input ends (Read returns io.EOF); nil as in
	eofOnce   sync.Once
	done      chan struct{} // closed when the session ends
	closeOnce sync.Once
	cur       inbound // the message Read returned last (reader-owned)

	mu         sync.Mutex
	closed     bool
	version    string             // negotiated revision (from the initialize result)
	initID     string             // raw id of the initialize request in flight
	pending    map[string]*stream // unanswered request id → stream
	streams    map[string]*stream // streams that may still be resumed or written
	standalone *stream
	nextStream uint64
	active     int // HTTP requests being served for this session
	gets       int // open GET streams (MaxSessionGETStreams)
	lastActive time.Time
	idle       *time.Timer
	usedOnce   bool        // a request named the session (InitTimeout met)
	init       *time.Timer // ends the session if unused after InitTimeout

	// connCorrelationID is the correlation id the session's server gave
	// its connection (SetConnectionCorrelationID); "" when it gave none.
	connCorrelationID string // guarded by mu
}

var (
	_ transport.Transport        = (*httpSession)(nil)
	_ transport.MessageContexter = (*httpSession)(nil)
)

// newHTTPSession makes a session. inPOST is a session that serves the one
// message of a POST on the POST's goroutine (Options.ServeRequest): it has
// no input to Read, and its context is parent, the POST's, when
// ServeRequest is mcp's (which ends the request when the session closes:
// OnAbort), else derives from it.
func (h *Handler) newHTTPSession(parent context.Context, id, subject string, stateless, inPOST bool) *httpSession {
	ctx, cancel := parent, context.CancelFunc(nil)
	if !inPOST || !h.opts.serveRequestAborts {
		ctx, cancel = context.WithCancel(parent)
	} // else: the POST's context ends the request, close ends it through OnAbort
	s := &httpSession{
		h: h, id: id, subject: subject, stateless: stateless,
		ctx: ctx, cancel: cancel,
		done:    make(chan struct{}),
		pending: map[string]*stream{},
	}
	if !inPOST {
		inCap := 16
		if stateless {
			inCap = 1 // it serves the one message of its POST
		}
		s.in, s.eof = make(chan inbound, inCap), make(chan struct{})
	}
	s.lastActive = time.Now()
	if !stateless && h.opts.IdleTimeout > 0 {
		s.idle = time.AfterFunc(h.opts.IdleTimeout, s.checkIdle)
	}
	if !stateless && h.opts.InitTimeout > 0 {
		s.init = time.AfterFunc(h.opts.InitTimeout, s.checkInit)
	}
	return s
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

// OnAbort registers end, which close calls to end the request of a
// session served in its POST (whose context is the POST's own); at once
// when the session is closed already. mcp.Server.ServeRequest registers.
func (s *httpSession) OnAbort(end func()) {
	s.mu.Lock()
	if !s.closed {
		s.abort = end
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	end()
}

// PrereadMessage returns the message Read returned last (or the one a
// session served in its POST hands to mcp.Server.ServeRequest) as
// parseIncoming read it, with the server's reading of its params, so that
// mcp does not read it again; ok is false for a batch, and for a message
// the session made itself. The POST's body is its own: the message's bytes
// never change.
func (s *httpSession) PrereadMessage() (m *jsonrpc.Message, maxDepth int, rd revision.Reading, ok bool) {
	env := s.cur.env
	if env == nil || env.batch {
		return nil, 0, rd, false
	}
	return &env.msg, s.h.opts.MaxDepth, env.reading, true
}

// MessageContext implements transport.MessageContexter: parent overlaid with the
// values of the HTTP request that carried the last message read, and the
// stream its responses and related messages go to.
func (s *httpSession) MessageContext(parent context.Context) context.Context {
	if s.cur.values == nil && s.cur.stream == nil {
		return parent
	}
	return &msgContext{Context: parent, values: s.cur.values, stream: s.cur.stream}
}

// Write routes msg to exactly one stream: a response to the stream of the
// POST that carried its request; a request or notification written with a
// context carrying a request's stream (see transport.MessageContexter) to that
// stream while it is open; anything else to the standalone (GET) stream.
func (s *httpSession) Write(ctx context.Context, msg []byte) error {
	select {
	case <-s.done:
		return transport.ErrClosed
	default:
	}
	out, err := peekWritten(msg)
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
			s.h.log.Debug("transport: response to an unknown or cancelled request dropped", "session", s.id)
			return nil
		}
		code, _ := transport.ErrorCodeFromContext(ctx)
		return st.send(msg, n, code)
	}
	if st, _ := ctx.Value(streamKey{}).(*stream); st != nil && st.sess == s && !st.standalone {
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
		if p := s.pending[id]; p != nil {
			if st == nil {
				st = p
			}
			if p == st {
				delete(s.pending, id)
				n++
			}
		}
		if id == s.initID && s.initID != "" {
			s.initID = ""
			s.version = resultProtocolVersion(msg)
		}
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
	if st == nil || st.sess != s || st.standalone {
		return nil, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, p := range s.pending {
		if p == st {
			delete(s.pending, id)
			n++
		}
	}
	if n == 0 {
		return nil, 0
	}
	s.h.inflight.Add(int64(-n))
	return st, n
}

func (s *httpSession) sendStandalone(msg []byte, request bool) error {
	s.mu.Lock()
	st := s.standalone
	s.mu.Unlock()
	if st == nil {
		if request {
			return ErrNoStream
		}
		s.h.log.Debug("transport: notification dropped: no GET stream is open", "session", s.id)
		return nil
	}
	st.mu.Lock()
	if st.att == nil && !st.useIDs {
		st.mu.Unlock()
		if request {
			return ErrNoStream
		}
		s.h.log.Debug("transport: notification dropped: no GET stream is open", "session", s.id)
		return nil
	}
	st.mu.Unlock()
	return st.send(msg, 0, 0)
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
		abort := s.abort
		s.abort = nil
		n := len(s.pending)
		clear(s.pending)
		clear(s.streams)
		s.standalone = nil
		if s.idle != nil {
			s.idle.Stop()
		}
		if s.init != nil {
			s.init.Stop()
		}
		s.mu.Unlock()
		s.h.inflight.Add(int64(-n))
		close(s.done)
		s.endInput()
		if s.cancel != nil {
			s.cancel()
		}
		if abort != nil {
			abort()
		}
		if s.id != "" && s.h.store != nil {
			_ = s.h.store.SessionClosed(context.Background(), s.id)
		}
	})
}

func (s *httpSession) endInput() {
	if s.eof != nil { // nil: a session served in its POST has no input
		s.eofOnce.Do(func() { close(s.eof) })
	}
}

// resumable reports whether the session's streams carry event ids.
func (s *httpSession) resumable() bool { return !s.stateless && s.h.store != nil }

// canPrime reports whether the negotiated revision has priming events and
// stream closing before the response (2025-11-25 and later).
func (s *httpSession) canPrime() bool {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	return v != "" && v >= "2025-11-25"
}

// setInitHeaderLocked sets Mcp-Session-Id on the response of the POST that
// carried initialize when msg, the first message on it, is the initialize
// result; after an error response the session, which never started, ends.
func (s *httpSession) setInitHeaderLocked(st *stream, hdr http.Header, msg []byte) {
	if !st.initPOST || s.id == "" {
		return
	}
	if out, err := peekOutgoing(msg); err != nil || !out.response {
		return // something before the result: the header goes with the stream's start
	}
	if resultProtocolVersion(msg) == "" {
		go s.close()
		return
	}
	hdr.Set(headerSessionID, s.id)
}

// newStream registers a stream for the requests ids (raw); a duplicate of
// an unanswered request id is refused (its response could not be routed).
func (s *httpSession) newStream(ids []string) (*stream, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range ids {
		if s.pending[id] != nil {
			return nil, id
		}
		for _, prev := range ids[:i] {
			if prev == id {
				return nil, id
			}
		}
	}
	s.nextStream++
	id := "" // only a resumable stream's events carry its id
	if s.resumable() {
		id = strconv.FormatUint(s.nextStream, 10)
	}
	st := newStream(s, id, false)
	st.pending = len(ids)
	for _, id := range ids {
		s.pending[id] = st
	}
	s.h.inflight.Add(int64(len(ids)))
	if st.useIDs {
		s.addStreamLocked(st)
	}
	return st, ""
}

// addStreamLocked records st by its id (resumable streams), in a map made
// on first use: a stateless session's streams have no ids.
func (s *httpSession) addStreamLocked(st *stream) {
	if s.streams == nil {
		s.streams = map[string]*stream{}
	}
	s.streams[st.id] = st
}

// standaloneStream returns the session's GET stream, creating it.
func (s *httpSession) standaloneStream() *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standalone == nil {
		s.standalone = newStream(s, "0", true)
		s.standalone.mode = modeSSE
		if s.standalone.useIDs {
			s.addStreamLocked(s.standalone)
		}
	}
	return s.standalone
}

// release forgets requests the client cancelled: no response will come.
func (s *httpSession) release(ids []string) {
	s.mu.Lock()
	byStream := map[*stream]int{}
	for _, id := range ids {
		if st := s.pending[id]; st != nil {
			delete(s.pending, id)
			byStream[st]++
		}
	}
	s.mu.Unlock()
	for st, n := range byStream {
		s.h.inflight.Add(int64(-n))
		st.release(n)
	}
}

// forgetStream drops a finished stream that has no connection; its events
// stay in the event store for replay.
func (s *httpSession) forgetStream(st *stream) {
	if st.standalone {
		return
	}
	s.mu.Lock()
	if s.streams[st.id] == st {
		delete(s.streams, st.id)
	}
	s.mu.Unlock()
}

// cancelAbandonedWait bounds how long an abandoned POST waits to hand the
// server the cancellation of its requests.
const cancelAbandonedWait = 5 * time.Second

// cancelAbandoned ends the requests of a POST whose client went away
// before they were answered, when their stream cannot be resumed: the
// server reads notifications/cancelled for each one still unanswered, so
// their handlers stop (nobody could receive the answers).
func (s *httpSession) cancelAbandoned(ids []string) {
	s.mu.Lock()
	var open []string
	for _, id := range ids {
		if s.pending[id] != nil {
			open = append(open, id)
		}
	}
	s.mu.Unlock()
	// The server reads them soon; if it is stuck, the session's idle and
	// shutdown rules apply: this goroutine does not wait longer than that.
	t := time.NewTimer(cancelAbandonedWait)
	defer t.Stop()
	for _, id := range open {
		msg := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"the client closed the connection"}}`)
		select {
		case s.in <- inbound{msg: msg}:
		case <-s.done:
			return
		case <-s.eof:
			return
		case <-t.C:
			s.h.log.Debug("transport: the server did not take the cancellation of an abandoned request in time", "session", s.id)
			return
		}
	}
	s.release(open)
}

// deliver queues a POSTed message for Read, with its reading (env).
func (s *httpSession) deliver(r *http.Request, env *envelope, msg []byte, st *stream) bool {
	m := inbound{msg: msg, values: context.WithoutCancel(r.Context()), stream: st, env: env}
	select {
	case s.in <- m:
		return true
	case <-s.done:
	case <-s.eof:
	case <-r.Context().Done():
	}
	return false
}

// begin and end bracket each HTTP request served for the session.
func (s *httpSession) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active++
	return true
}

func (s *httpSession) end() {
	s.mu.Lock()
	s.active--
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// checkIdle ends a session that has had no HTTP request, open stream or
// unanswered request for IdleTimeout.
func (s *httpSession) checkIdle() {
	timeout := s.h.opts.IdleTimeout
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.active > 0 || len(s.pending) > 0 {
		s.idle.Reset(timeout)
		s.mu.Unlock()
		return
	}
	if rest := time.Until(s.lastActive.Add(timeout)); rest > 0 {
		s.idle.Reset(rest)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.h.log.Info("transport: idle session expired", "session", s.id, "idleTimeout", timeout)
	s.close()
}

// used records that a POST named the session after its initialize: the
// session is no longer subject to InitTimeout.
func (s *httpSession) used() {
	s.mu.Lock()
	if !s.usedOnce {
		s.usedOnce = true
		if s.init != nil {
			s.init.Stop()
		}
	}
	s.mu.Unlock()
}

// checkInit ends a session that no POST named within InitTimeout after its
// initialize.
func (s *httpSession) checkInit() {
	s.mu.Lock()
	done := s.closed || s.usedOnce
	s.mu.Unlock()
	if done {
		return
	}
	s.h.refusals.print("transport: session never used after initialize expired",
		slog.Duration("initTimeout", s.h.opts.InitTimeout))
	s.close()
}
