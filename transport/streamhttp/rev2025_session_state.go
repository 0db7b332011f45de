//go:build !keel_omit2025

package streamhttp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/transport"
)

// handlerRev2025 is what a Handler keeps for the 2025 rules: its stateful
// sessions and the event store their streams are resumed from.
type handlerRev2025 struct {
	sessions     map[string]*httpSession // by Mcp-Session-Id (guarded by Handler.mu)
	peerSessions peerCounts              // live sessions per peer (MaxSessionsPerPeer)
	store        EventStore              // nil: no resumption
}

// init sets what the 2025 rules need from the options: the defaults of
// the options only sessions use, and the event store unless sessions are
// off or resumption is disabled.
func (r *handlerRev2025) init(o *Options) {
	r.sessions = map[string]*httpSession{}
	if o.SSEAfter == 0 {
		o.SSEAfter = DefaultSSEAfter
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.InitTimeout == 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerPeer == 0 {
		o.MaxSessionsPerPeer = DefaultMaxSessionsPerPeer
	}
	if o.MaxSessionGETStreams == 0 {
		o.MaxSessionGETStreams = DefaultMaxSessionGETStreams
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = DefaultRetryInterval
	}
	if o.NewSessionID == nil {
		o.NewSessionID = randomSessionID
	}
	if !o.Stateless && !o.DisableResumption {
		r.store = o.EventStore
		if r.store == nil {
			r.store = NewMemoryEventStore(nil)
		}
	}
}

func randomSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SessionCount returns the number of live sessions.
func (h *Handler) SessionCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.rev2025.sessions)
}

// appendSessionsLocked appends the stateful sessions to all.
func (h *Handler) appendSessionsLocked(all []*httpSession) []*httpSession {
	for _, s := range h.rev2025.sessions {
		all = append(all, s)
	}
	return all
}

// forgetSessionLocked drops s from the stateful sessions, if it is one.
func (h *Handler) forgetSessionLocked(s *httpSession) {
	if id := s.rev2025.id; id != "" && h.rev2025.sessions[id] == s {
		delete(h.rev2025.sessions, id)
		p, _ := transport.PeerFromContext(s.ctx) // the peer that created it
		h.rev2025.peerSessions.release(p.Key)
	}
}

// sessionRev2025 is what a session of the 2025 rules has beyond a
// session that serves one POST: its Mcp-Session-Id and owner, the
// revision initialize negotiated, its timers, its resumable streams and
// its GET stream. A session serving one POST leaves it zero.
type sessionRev2025 struct {
	id      string // Mcp-Session-Id; "" for a session that serves one POST
	subject string // authenticated user the session is bound to ("" = none)
	version string // negotiated revision (from the initialize result)
	initID  string // raw id of the initialize request in flight
	// connCorrelationID is the correlation id the session's server gave
	// its connection (SetConnectionCorrelationID); "" when it gave none.
	connCorrelationID string

	streams    map[string]*stream // streams that may still be resumed or written
	standalone *stream
	nextStream uint64
	active     int // HTTP requests being served for this session
	gets       int // open GET streams (MaxSessionGETStreams)
	lastActive time.Time
	idle       *time.Timer
	init       *time.Timer // ends the session if unused after InitTimeout
	usedOnce   bool        // a request named the session (InitTimeout met)
	stateful   bool        // a session that outlives its POSTs (createSession)
}

// sessionID returns the session's Mcp-Session-Id ("" for a session that
// serves one POST), for log lines.
func (s *httpSession) sessionID() string { return s.rev2025.id }

// makeStateful turns a new session into a stateful one named id, bound to
// subject, and starts its idle and InitTimeout timers.
func (s *httpSession) makeStateful(id, subject string) {
	o := &s.h.opts
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rev2025
	r.id, r.subject, r.stateful = id, subject, true
	r.lastActive = time.Now()
	if o.IdleTimeout > 0 {
		r.idle = time.AfterFunc(o.IdleTimeout, s.checkIdle)
	}
	if o.InitTimeout > 0 {
		r.init = time.AfterFunc(o.InitTimeout, s.checkInit)
	}
}

// answeredLocked notes that the request id was answered by msg: the
// answer to initialize names the session's revision.
func (r *sessionRev2025) answeredLocked(id string, msg []byte) {
	if id == r.initID && r.initID != "" {
		r.initID = ""
		r.version = resultProtocolVersion(msg)
	}
}

// endLocked forgets the streams of an ended session and stops its timers.
func (r *sessionRev2025) endLocked() {
	clear(r.streams)
	r.standalone = nil
	if r.idle != nil {
		r.idle.Stop()
	}
	if r.init != nil {
		r.init.Stop()
	}
}

// releaseEvents discards the stored events of an ended session.
func (s *httpSession) releaseEvents() {
	if id := s.rev2025.id; id != "" && s.h.rev2025.store != nil {
		_ = s.h.rev2025.store.SessionClosed(context.Background(), id)
	}
}

// SetConnectionCorrelationID records the correlation id the session's
// server gives its connection (mcp.Server does, before serving it): the
// errors the handler answers itself for the session carry it.
func (s *httpSession) SetConnectionCorrelationID(id string) {
	s.mu.Lock()
	s.rev2025.connCorrelationID = id
	s.mu.Unlock()
}

// sessionCorrelationID returns the correlation id of the session ex is
// in, or else of the one its request names (Mcp-Session-Id); "" when it
// names none, an unknown one, one bound to another user, or one whose
// server gave it none.
func (h *Handler) sessionCorrelationID(ex exchange) string {
	s := ex.rev2025.s
	if s == nil {
		if id := ex.rev2025.header.Get(headerSessionID); id != "" {
			h.mu.Lock()
			s = h.rev2025.sessions[id]
			h.mu.Unlock()
			if s != nil && s.rev2025.subject != subjectOfContext(ex.rev2025.ctx) {
				s = nil
			}
		}
	}
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev2025.connCorrelationID
}

// release forgets requests the client cancelled: no response will come.
func (s *httpSession) release(ids []string) {
	s.mu.Lock()
	byStream := map[*stream]int{}
	for _, id := range ids {
		if st := s.pending.get(id); st != nil {
			s.pending.remove(id)
			byStream[st]++
		}
	}
	s.mu.Unlock()
	for st, n := range byStream {
		s.h.inflight.Add(int64(-n))
		st.release(n)
	}
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
		if s.pending.get(id) != nil {
			open = append(open, id)
		}
	}
	s.mu.Unlock()
	// The server reads them soon; if it is stuck, the session's idle and
	// shutdown rules apply: this goroutine does not wait longer than that.
	t := time.NewTimer(cancelAbandonedWait)
	defer t.Stop()
	done := s.doneChan()
	for _, id := range open {
		msg := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"the client closed the connection"}}`)
		select {
		case s.in <- inbound{msg: msg}:
		case <-done:
			return
		case <-s.eof:
			return
		case <-t.C:
			s.h.log.Debug("transport: the server did not take the cancellation of an abandoned request in time", "session", s.rev2025.id)
			return
		}
	}
	s.release(open)
}

// begin and end bracket each HTTP request served for the session.
func (s *httpSession) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.rev2025.active++
	return true
}

func (s *httpSession) end() {
	s.mu.Lock()
	s.rev2025.active--
	s.rev2025.lastActive = time.Now()
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
	r := &s.rev2025
	if r.active > 0 || s.pending.len() > 0 {
		r.idle.Reset(timeout)
		s.mu.Unlock()
		return
	}
	if rest := time.Until(r.lastActive.Add(timeout)); rest > 0 {
		r.idle.Reset(rest)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.h.log.Info("transport: idle session expired", "session", r.id, "idleTimeout", timeout)
	s.close()
}

// used records that a POST named the session after its initialize: the
// session is no longer subject to InitTimeout.
func (s *httpSession) used() {
	s.mu.Lock()
	if r := &s.rev2025; !r.usedOnce {
		r.usedOnce = true
		if r.init != nil {
			r.init.Stop()
		}
	}
	s.mu.Unlock()
}

// checkInit ends a session that no POST named within InitTimeout after its
// initialize.
func (s *httpSession) checkInit() {
	s.mu.Lock()
	done := s.closed || s.rev2025.usedOnce
	s.mu.Unlock()
	if done {
		return
	}
	s.h.refusals.print("transport: session never used after initialize expired",
		slog.Duration("initTimeout", s.h.opts.InitTimeout))
	s.close()
}

// subjectOf returns the verified identity a session is bound to: the
// peer key of the request's bearer token (subject, else client id), or ""
// without a token.
func subjectOf(r *http.Request) string { return subjectOfContext(r.Context()) }

// subjectOfContext is subjectOf for the context of a request.
func subjectOfContext(ctx context.Context) string {
	if p, ok := transport.PeerOfToken(TokenInfoFromContext(ctx)); ok {
		return p.Key
	}
	return ""
}

// in returns ex with the session the request names (found, or created
// by an initialize).
func (ex exchange) in(s *httpSession) exchange {
	ex.rev2025.s = s
	return ex
}

// exchangeRev2025 is what the 2025 rules read of a request on its way to
// an error to find the session it names: its header and context, and the
// session once found. It holds them rather than the request: escape
// analysis does not tell a struct's fields apart, and the error path
// stores the session (and the Handler beside it), so a request held here
// would be moved to the heap on every request, errors or not.
type exchangeRev2025 struct {
	header http.Header
	ctx    context.Context
	s      *httpSession // nil before (or without) it
}

func exchangeOfRequest(r *http.Request) exchangeRev2025 {
	return exchangeRev2025{header: r.Header, ctx: r.Context()}
}

// envelopeRev2025 is what the 2025 rules read of a POSTed message beyond
// its routing: the requests its notifications/cancelled name.
type envelopeRev2025 struct {
	cancelled []string // raw requestIds of notifications/cancelled
}

// noteNotification records the request a notifications/cancelled names.
func (e *envelopeRev2025) noteNotification(m *jsonrpc.Message) {
	if m.Method == "notifications/cancelled" && m.Params != nil {
		var p struct {
			RequestID jsontext.Value `json:"requestId"`
		}
		if jsonv2.Unmarshal(m.Params, &p) == nil && p.RequestID != nil {
			e.cancelled = append(e.cancelled, string(p.RequestID))
		}
	}
}
