package streamhttp

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/revision"
)

// streamMode is how a stream answers: undecided until the first message
// (ResponseAuto), then one JSON body or an SSE stream.
type streamMode uint8

const (
	modeUndecided streamMode = iota
	modeJSON
	modeSSE
)

// stream is one logical stream of a session: the response to one POST
// carrying requests, or the session's standalone stream (GET). Its HTTP
// connection may come and go (attachment); with event ids, what is sent
// while no connection is attached is kept in the event store and replayed
// when the client resumes with Last-Event-ID.
type stream struct {
	sess *httpSession

	mu       sync.Mutex
	att      *attachment
	mode     streamMode
	pending  int           // requests not yet answered (POST streams)
	done     chan struct{} // closed once finished; made on first use (doneLocked)
	finished bool          // every request answered (or released)
	modern   bool          // answers a request of revision 2026-07-28 or later
	listen   bool          // answers a modern subscriptions/listen (always SSE)
	// x is the hand-off of the POST's one message (nil for a batch, and
	// for a POST to a 2025 session): the server records in it the error
	// code of the answer, which gives a modern answer its HTTP status.
	x *handoff.Request

	// rev2025 is what only a stream of a 2025 session has: an id and
	// event ids (resumable), the GET stream's mark, the switch to SSE
	// (guarded by mu where it changes). It is empty in a build without
	// those rules (keel_omit2025).
	rev2025 streamRev2025
}

// errorCode is the JSON-RPC error code of the answer st carries (0: a
// result, or no hand-off).
func (st *stream) errorCode() int64 {
	if st.x == nil {
		return 0
	}
	return st.x.ErrorCode()
}

// status is the HTTP status of a modern answer whose JSON-RPC error code
// is code: its hand-off's (handoff.Request.StatusOf: a refusal keeps its
// own), else revision.ErrorStatus's.
func (st *stream) status(code int64) int {
	if st.x == nil {
		return revision.ErrorStatus(code)
	}
	return st.x.StatusOf(code)
}

// attachment is one HTTP connection of a stream.
type attachment struct {
	w          http.ResponseWriter
	rc         http.ResponseController // of w
	headerSent bool
	dropped    bool          // the connection is given up (guarded by the stream's mu)
	gone       chan struct{} // closed once dropped; made on first use (goneLocked)
}

var (
	errStreamFinished = errors.New("transport: stream finished")
	errNoRelated      = errors.New("transport: related messages are not sent on JSON responses")
	// ErrNoStream is returned by the HTTP transport's Write for a request
	// to the client when no stream can carry it (the client has no GET
	// stream open and the request is not tied to a client request).
	ErrNoStream = errors.New("transport: no stream to the client can carry the message")
)

func newStream(sess *httpSession) *stream {
	st := new(stream)
	initStream(st, sess)
	return st
}

// initStream makes st, a zero stream, a stream of sess.
func initStream(st *stream, sess *httpSession) {
	st.sess = sess
}

// closedChan is the channel of a signal that fired before anything
// waited on it (doneChan, doneLocked, goneLocked).
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// signalChan returns *ch, the channel closed when a signal fires, making
// it on first use (a signal that fires before anything waits makes none);
// once fired (fired true) without one, closedChan. The caller holds the
// lock that guards *ch and fired.
func signalChan(ch *chan struct{}, fired bool) <-chan struct{} {
	if *ch == nil {
		if fired {
			return closedChan
		}
		*ch = make(chan struct{})
	}
	return *ch
}

// doneLocked returns the channel closed once st is finished. The caller
// holds st.mu.
func (st *stream) doneLocked() <-chan struct{} { return signalChan(&st.done, st.finished) }

// goneLocked returns the channel closed once a is given up. The caller
// holds the stream's mu.
func (a *attachment) goneLocked() <-chan struct{} { return signalChan(&a.gone, a.dropped) }

// doneChan returns the channel closed once s has ended.
func (s *httpSession) doneChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return signalChan(&s.done, s.closed)
}

// isClosed reports whether s has ended (close).
func (s *httpSession) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// attachLocked connects w to the stream (the caller holds st.mu); into,
// if not nil, is the zero attachment to use (see ephemeral).
func (st *stream) attachLocked(w http.ResponseWriter, into *attachment) *attachment {
	a := into
	if a == nil {
		a = new(attachment)
	}
	a.w, a.rc = w, *http.NewResponseController(w)
	st.att = a
	return a
}

// detach gives up attachment a if it is still the stream's connection.
// The stream's handler calls it before returning: nothing is written to w
// afterwards.
func (st *stream) detach(a *attachment) {
	st.mu.Lock()
	if st.att == a {
		st.att = nil
		st.dropAttLocked(a)
	}
	gone := st.finished && st.att == nil
	st.mu.Unlock()
	if gone {
		st.sess.forgetStream(st)
	}
}

func (st *stream) dropAttLocked(a *attachment) {
	if !a.dropped {
		a.dropped = true
		if a.gone != nil {
			close(a.gone)
		}
	}
}

// send writes one message on the stream. final reports that the message
// answers requests of this stream (answered of them); the stream finishes
// when none is left. It returns errStreamFinished for a related message on
// a finished stream (the caller then uses the standalone stream).
func (st *stream) send(msg []byte, answered int, code int64) error {
	h := st.sess.h
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return errStreamFinished
	}
	last := false
	if answered > 0 {
		st.pending -= answered
		last = st.pending <= 0
	} else if !st.standalone() && ((h.opts.ResponseMode == ResponseJSON && !st.listen) || st.mode == modeJSON) {
		st.mu.Unlock()
		return errNoRelated
	}
	if st.mode == modeUndecided {
		// A modern error response goes as JSON even in ResponseSSE mode:
		// its HTTP status (404, 400) is part of the answer.
		if last && (h.opts.ResponseMode != ResponseSSE || st.modern && st.status(code) != http.StatusOK) {
			st.mode = modeJSON
		} else {
			st.mode = modeSSE
		}
	}
	var err error
	if st.mode == modeJSON {
		err = st.writeJSONLocked(msg, code)
	} else {
		err = st.writeEventLocked(msg)
	}
	if last {
		st.finishLocked()
	}
	gone := st.finished && st.att == nil
	st.mu.Unlock()
	if gone {
		st.sess.forgetStream(st)
	}
	return err
}

// finishLocked marks the stream finished: its handler ends the response.
func (st *stream) finishLocked() {
	if st.finished {
		return
	}
	st.finished = true
	if st.done != nil {
		close(st.done)
	}
	st.rev2025.finishLocked()
}

func (st *stream) writeJSONLocked(msg []byte, code int64) error {
	a := st.att
	if a == nil {
		st.sess.h.log.Debug("transport: response dropped: the client's connection is gone", "session", st.sess.sessionID())
		return nil
	}
	hdr := a.w.Header()
	hdr.Set("Content-Type", "application/json")
	st.sess.setInitHeaderLocked(st, hdr, msg)
	status := http.StatusOK
	if st.modern {
		status = st.status(code)
	}
	a.w.WriteHeader(status)
	a.headerSent = true
	if _, err := a.w.Write(msg); err != nil {
		st.att = nil
		st.dropAttLocked(a)
		return nil // the client went away; a lost response is not the server's error
	}
	return nil
}

// writeHeaderLocked sends the SSE response header and, when the stream is
// resumable and the revision allows it, the priming event (an id, the
// retry interval and empty data).
func (st *stream) writeHeaderLocked(a *attachment, prime bool) {
	hdr := a.w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	a.w.WriteHeader(http.StatusOK)
	a.headerSent = true
	if prime && !st.writePrimingLocked(a) {
		return
	}
	_ = a.rc.Flush()
}

func (st *stream) writeEventLocked(msg []byte) error {
	a := st.att
	if a != nil && !a.headerSent {
		st.sess.setInitHeaderLocked(st, a.w.Header(), msg)
		st.writeHeaderLocked(a, true) // the priming event names the position before msg
		a = st.att
	}
	id := st.nextEventLocked(msg) // "": events without ids, not stored
	if a == nil {
		if id == "" {
			st.sess.h.log.Debug("transport: message dropped: the client's connection is gone", "session", st.sess.sessionID())
		}
		return nil
	}
	bp := eventBufPool.Get().(*[]byte)
	buf := appendSSEEvent((*bp)[:0], id, 0, msg)
	_, err := a.w.Write(buf)
	if err == nil {
		err = a.rc.Flush()
	}
	if cap(buf) <= 64<<10 {
		*bp = buf[:0]
		eventBufPool.Put(bp)
	}
	if err != nil {
		st.att = nil
		st.dropAttLocked(a)
	}
	return nil
}

var eventBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// keepAlive sends an SSE comment every interval while attachment a is the
// stream's SSE connection, until the stream finishes or a is given up.
func (st *stream) keepAlive(a *attachment, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	st.mu.Lock()
	done, gone := st.doneLocked(), a.goneLocked()
	st.mu.Unlock()
	sessDone := st.sess.doneChan()
	for {
		select {
		case <-t.C:
		case <-done:
			return
		case <-gone:
			return
		case <-sessDone:
			return
		}
		st.mu.Lock()
		if st.att == a && a.headerSent && st.mode == modeSSE && !st.finished {
			_, err := a.w.Write([]byte(": keep-alive\n\n"))
			if err == nil {
				err = a.rc.Flush()
			}
			if err != nil {
				st.att = nil
				st.dropAttLocked(a)
			}
		}
		st.mu.Unlock()
	}
}

// wait blocks the HTTP handler of attachment a until the stream is
// finished, the connection is given up, the client goes away or the
// session ends; then it detaches a.
func (st *stream) wait(r *http.Request, a *attachment) (finished bool) {
	st.mu.Lock()
	finished = st.finished // (a request served in its POST is answered already)
	var done, gone <-chan struct{}
	if !finished {
		done, gone = st.doneLocked(), a.goneLocked()
	}
	st.mu.Unlock()
	if !finished {
		select {
		case <-done:
			finished = true
		case <-gone:
		case <-r.Context().Done():
		case <-st.sess.doneChan():
		}
	}
	st.detach(a)
	return finished
}
