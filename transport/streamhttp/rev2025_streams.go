//go:build !keel_omit2025

package streamhttp

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelmcp/keel/internal/revision"
)

// streamRev2025 is what a stream of a 2025 session has beyond the stream
// of a POST served on its own: an id and numbered events kept in the event
// store (resumable), the GET stream's mark, the timer of the switch to SSE
// and the mark of the POST that carried initialize.
type streamRev2025 struct {
	id         string
	standalone bool        // the session's GET stream
	useIDs     bool        // events carry ids and are stored (resumable)
	seq        uint64      // seq of the last event sent (guarded by the stream's mu)
	sseTimer   *time.Timer // ResponseAuto: the switch to SSE after SSEAfter
	initPOST   bool        // the POST of an initialize request (session id header)
}

// standalone reports whether st is its session's GET stream.
func (st *stream) standalone() bool { return st.rev2025.standalone }

// finishLocked stops the switch to SSE of a finished stream.
func (r *streamRev2025) finishLocked() {
	if r.sseTimer != nil {
		r.sseTimer.Stop()
	}
}

// resumable reports whether the session's streams carry event ids.
func (s *httpSession) resumable() bool { return s.rev2025.stateful && s.h.rev2025.store != nil }

// canPrime reports whether the negotiated revision has priming events and
// stream closing before the response (2025-11-25 and later).
func (s *httpSession) canPrime() bool {
	s.mu.Lock()
	v := s.rev2025.version
	s.mu.Unlock()
	return revision.PrimingEvents(v)
}

// addStreamLocked numbers a new stream of s and, when s is resumable,
// records it by its id (in a map made on first use).
func (s *httpSession) addStreamLocked(st *stream) {
	r := &s.rev2025
	r.nextStream++
	if !s.resumable() {
		return // only a resumable stream's events carry its id
	}
	st.rev2025.id, st.rev2025.useIDs = strconv.FormatUint(r.nextStream, 10), true
	if r.streams == nil {
		r.streams = map[string]*stream{}
	}
	r.streams[st.rev2025.id] = st
}

// standaloneStream returns the session's GET stream, creating it.
func (s *httpSession) standaloneStream() *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rev2025
	if r.standalone == nil {
		st := newStream(s)
		st.rev2025.id, st.rev2025.standalone, st.rev2025.useIDs = "0", true, s.resumable()
		st.mode = modeSSE
		if st.rev2025.useIDs {
			if r.streams == nil {
				r.streams = map[string]*stream{}
			}
			r.streams["0"] = st
		}
		r.standalone = st
	}
	return r.standalone
}

// forgetStream drops a finished stream that has no connection; its events
// stay in the event store for replay.
func (s *httpSession) forgetStream(st *stream) {
	if st.rev2025.standalone {
		return
	}
	s.mu.Lock()
	if r := &s.rev2025; r.streams[st.rev2025.id] == st {
		delete(r.streams, st.rev2025.id)
	}
	s.mu.Unlock()
}

// sendStandalone sends msg, which no request's stream carries, on the
// session's GET stream.
func (s *httpSession) sendStandalone(msg []byte, request bool) error {
	s.mu.Lock()
	st := s.rev2025.standalone
	s.mu.Unlock()
	if st == nil {
		return s.noStandaloneStream(request)
	}
	st.mu.Lock()
	if st.att == nil && !st.rev2025.useIDs {
		st.mu.Unlock()
		return s.noStandaloneStream(request)
	}
	st.mu.Unlock()
	return st.send(msg, 0, 0)
}

// setInitHeaderLocked sets Mcp-Session-Id on the response of the POST that
// carried initialize when msg, the first message on it, is the initialize
// result; after an error response the session, which never started, ends.
func (s *httpSession) setInitHeaderLocked(st *stream, hdr http.Header, msg []byte) {
	if !st.rev2025.initPOST || s.rev2025.id == "" {
		return
	}
	if out, err := peekOutgoing(msg); err != nil || !out.response {
		return // something before the result: the header goes with the stream's start
	}
	if resultProtocolVersion(msg) == "" {
		go s.close()
		return
	}
	hdr.Set(headerSessionID, s.rev2025.id)
}

// writePrimingLocked sends the priming event of an SSE stream when the
// stream is resumable and the revision has them (an id, the retry
// interval and empty data); false means the connection was given up.
func (st *stream) writePrimingLocked(a *attachment) bool {
	if !st.rev2025.useIDs || !st.sess.canPrime() {
		return true
	}
	buf := appendSSEEvent(nil, eventID(st.rev2025.id, st.rev2025.seq), st.sess.h.opts.RetryInterval, nil)
	if _, err := a.w.Write(buf); err != nil {
		st.att = nil
		st.dropAttLocked(a)
		return false
	}
	return true
}

// nextEventLocked numbers the next event of st, stores msg as it when the
// stream is resumable and returns its id ("": events without ids).
func (st *stream) nextEventLocked(msg []byte) string {
	r := &st.rev2025
	r.seq++
	if !r.useIDs {
		return ""
	}
	id := eventID(r.id, r.seq)
	if err := st.sess.h.rev2025.store.Append(context.Background(), st.sess.rev2025.id, r.id, r.seq, msg); err != nil {
		st.sess.h.log.Warn("transport: event store append failed", "error", err)
	}
	return id
}

// release drops n requests that will never be answered (cancelled).
func (st *stream) release(n int) {
	st.mu.Lock()
	st.pending -= n
	if st.pending <= 0 && !st.finished {
		if st.mode == modeUndecided {
			// Nothing was sent: end with an empty SSE stream.
			st.mode = modeSSE
			if st.att != nil {
				st.writeHeaderLocked(st.att, false)
			}
		}
		st.finishLocked()
	}
	gone := st.finished && st.att == nil
	st.mu.Unlock()
	if gone {
		st.sess.forgetStream(st)
	}
}

// switchToSSE starts the SSE stream of an unanswered request still waiting
// on an undecided response (ResponseAuto after SSEAfter): the priming event
// gives the client an id to resume from.
func (st *stream) switchToSSE() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished || st.mode != modeUndecided || st.att == nil {
		return
	}
	st.mode = modeSSE
	st.writeHeaderLocked(st.att, true)
}

// closeForPolling implements CloseSSEStream.
func (st *stream) closeForPolling() error {
	if !st.rev2025.useIDs || !st.sess.canPrime() {
		return ErrNotResumable
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return nil
	}
	if st.mode == modeJSON {
		return ErrNotResumable
	}
	st.mode = modeSSE
	a := st.att
	if a == nil {
		return nil
	}
	if !a.headerSent {
		st.writeHeaderLocked(a, true)
	}
	if st.att == a {
		st.att = nil
		st.dropAttLocked(a)
	}
	return nil
}

// acquireGET counts a GET stream of s against MaxSessionGETStreams; false
// means it was refused (429). A true result must be paired with
// s.releaseGET.
func (h *Handler) acquireGET(w http.ResponseWriter, ex exchange, s *httpSession) bool {
	max := h.opts.MaxSessionGETStreams
	s.mu.Lock()
	if max > 0 && s.rev2025.gets >= max {
		s.mu.Unlock()
		h.refuseAtLimit(w, ex, http.StatusTooManyRequests, nil, "MaxSessionGETStreams", int64(max), "too many GET streams open for this session")
		return false
	}
	s.rev2025.gets++
	s.mu.Unlock()
	return true
}

func (s *httpSession) releaseGET() {
	s.mu.Lock()
	s.rev2025.gets--
	s.mu.Unlock()
}

// eventID formats the id of event seq of a stream: "<stream>_<seq>".
// Stream ids never contain '_'.
func eventID(stream string, seq uint64) string {
	return stream + "_" + strconv.FormatUint(seq, 10)
}

// parseEventID splits an event id made by eventID.
func parseEventID(id string) (stream string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '_')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(id[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return id[:i], n, true
}
