//go:build !keel_omit2025

package streamhttp

import "net/http"

// serveGET opens the session's standalone SSE stream (server-initiated
// messages), or resumes a stream with Last-Event-ID.
func (h *Handler) serveGET(w http.ResponseWriter, r *http.Request) {
	ex := h.exchangeOf(r)
	if !accepts(r, "text/event-stream") {
		writeHTTPError(w, ex, http.StatusNotAcceptable, codeServerError, "Not Acceptable: Accept must include text/event-stream")
		return
	}
	if _, ok := h.checkVersion(w, ex); !ok {
		return
	}
	if h.closing.Load() {
		writeHTTPError(w, ex, http.StatusServiceUnavailable, codeServerError, "Service Unavailable: shutting down")
		return
	}
	if !h.acquireStream(w, r) {
		return
	}
	defer h.releaseStream(r)
	s := h.lookup(w, ex)
	if s == nil {
		return
	}
	defer s.end()
	ex = ex.in(s)
	if !h.acquireGET(w, ex, s) {
		return
	}
	defer s.releaseGET()
	if last := r.Header.Get(headerLastEventID); last != "" {
		h.resume(w, r, ex, s, last)
		return
	}
	st := s.standaloneStream()
	st.mu.Lock()
	if st.att != nil {
		st.mu.Unlock()
		writeHTTPError(w, ex, http.StatusConflict, codeServerError, "Conflict: a GET stream is already open for this session")
		return
	}
	a := st.attachLocked(w, nil)
	st.writeHeaderLocked(a, true)
	st.mu.Unlock()
	st.wait(r, a)
}

// resume serves GET with Last-Event-ID: the events of that stream after
// the id are replayed, then, if the stream is still live, it continues on
// this connection.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, ex exchange, s *httpSession, last string) {
	sid, seq, ok := parseEventID(last)
	store := h.rev2025.store
	if !ok || store == nil {
		writeHTTPError(w, ex, http.StatusBadRequest, codeServerError, "Bad Request: unknown Last-Event-ID")
		return
	}
	s.mu.Lock()
	st := s.rev2025.streams[sid]
	s.mu.Unlock()
	type ev struct {
		seq  uint64
		data []byte
	}
	var events []ev
	collect := func(n uint64, data []byte) error {
		events = append(events, ev{n, data})
		return nil
	}
	write := func(a *attachment) {
		for _, e := range events {
			buf := appendSSEEvent(nil, eventID(sid, e.seq), 0, e.data)
			if _, err := a.w.Write(buf); err != nil {
				return
			}
		}
		_ = a.rc.Flush()
	}
	if st == nil {
		// A finished stream: replay what is left of it and end.
		if err := store.Replay(r.Context(), s.rev2025.id, sid, seq, collect); err != nil {
			writeHTTPError(w, ex, http.StatusBadRequest, codeServerError, "Bad Request: "+err.Error())
			return
		}
		a := &attachment{w: w, rc: *http.NewResponseController(w)}
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		write(a)
		return
	}
	st.mu.Lock()
	if st.mode == modeJSON {
		st.mu.Unlock()
		writeHTTPError(w, ex, http.StatusBadRequest, codeServerError, "Bad Request: unknown Last-Event-ID")
		return
	}
	if err := store.Replay(r.Context(), s.rev2025.id, sid, seq, collect); err != nil {
		st.mu.Unlock()
		writeHTTPError(w, ex, http.StatusBadRequest, codeServerError, "Bad Request: "+err.Error())
		return
	}
	if st.att != nil {
		st.mu.Unlock()
		writeHTTPError(w, ex, http.StatusConflict, codeServerError, "Conflict: the stream is still connected")
		return
	}
	st.mode = modeSSE
	a := st.attachLocked(w, nil)
	a.headerSent = true
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	write(a)
	if st.finished {
		st.att = nil
		st.mu.Unlock()
		s.forgetStream(st)
		return
	}
	st.mu.Unlock()
	st.wait(r, a)
}

// serveDELETE ends the session the client names.
func (h *Handler) serveDELETE(w http.ResponseWriter, r *http.Request) {
	ex := h.exchangeOf(r)
	if _, ok := h.checkVersion(w, ex); !ok {
		return
	}
	s := h.lookup(w, ex)
	if s == nil {
		return
	}
	s.end()
	s.close()
	h.log.Debug("transport: session deleted by the client", "session", s.rev2025.id)
	w.WriteHeader(http.StatusNoContent)
}
