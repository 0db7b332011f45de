package streamhttp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/logclip"
	"github.com/keelmcp/keel/transport"
)

// clipped returns an attribute with at most logclip.MaxPeerValue bytes
// of v, which came from a peer (see logclip.Attr).
func clipped(key, v string) slog.Attr { return logclip.Attr(key, v) }

// correlationAttr is the attribute of a refusal's log line naming the
// correlation id its error body carries (which a client may have chosen).
func correlationAttr(id string) slog.Attr { return clipped("correlationId", id) }

// refusalLog writes the log lines of refused requests through a
// logclip.Limiter: a burst of perSecond lines, then perSecond lines a
// second. The lines it suppresses are counted and reported in one line a
// second later.
type refusalLog struct {
	log       *slog.Logger
	level     slog.Level
	perSecond int // <= 0: refusals are not logged
	lim       *logclip.Limiter
}

func newRefusalLog(log *slog.Logger, level slog.Level, perSecond int) *refusalLog {
	l := &refusalLog{log: log, level: level, perSecond: perSecond}
	l.lim = logclip.NewLimiter(perSecond, l)
	return l
}

// Report implements logclip.Reporter: one line counting the refusal lines
// suppressed.
func (l *refusalLog) Report(n int64) {
	l.log.LogAttrs(context.Background(), l.level, "transport: log lines of refused requests suppressed (rate limit)",
		slog.Int64("suppressed", n), slog.Int("perSecond", l.perSecond))
}

// print logs msg with attrs unless the limit is reached.
func (l *refusalLog) print(msg string, attrs ...slog.Attr) {
	if l.perSecond <= 0 || !l.log.Enabled(context.Background(), l.level) || !l.lim.Allow() {
		return
	}
	l.log.LogAttrs(context.Background(), l.level, msg, attrs...)
}

// close stops the pending report.
func (l *refusalLog) close() { l.lim.Close() }

// limitData is the data of a JSON-RPC error refusing a request at a bound:
// the Options field and its value.
type limitData struct {
	Limit         string `json:"limit"`
	Max           int64  `json:"max"`
	CorrelationID string `json:"correlationId"`
}

func (d limitData) withCorrelationID(id string) any {
	d.CorrelationID = id
	return d
}

// refuseAtLimit answers status with a JSON-RPC error (echoing id) that
// names the bound reached, and logs the refusal.
func (h *Handler) refuseAtLimit(w http.ResponseWriter, ex exchange, status int, id jsontext.Value, limit string, max int64, what string) {
	msg := http.StatusText(status) + ": " + what + " (" + limit + " = " + strconv.FormatInt(max, 10) + ")"
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	cid := writeHTTPErrorID(w, ex, status, codeServerError, msg, id, limitData{Limit: limit, Max: max})
	h.refusals.print("transport: request refused: "+what, slog.String("limit", limit), slog.Int64("max", max), correlationAttr(cid))
}

// acquireStream counts an HTTP request against MaxStreamsPerPeer (429)
// and MaxStreams (503); false means it was refused. A true result must be
// paired with releaseStream.
func (h *Handler) acquireStream(w http.ResponseWriter, r *http.Request) bool {
	if !h.peerStreams.acquire(peerKey(r), h.opts.MaxStreamsPerPeer) {
		h.refuseAtLimit(w, h.exchangeOf(r), http.StatusTooManyRequests, nil, "MaxStreamsPerPeer", int64(h.opts.MaxStreamsPerPeer), "too many open streams for this peer")
		return false
	}
	max := int64(h.opts.MaxStreams)
	if n := h.streams.Add(1); max > 0 && n > max {
		h.streams.Add(-1)
		h.peerStreams.release(peerKey(r))
		h.refuseAtLimit(w, h.exchangeOf(r), http.StatusServiceUnavailable, nil, "MaxStreams", max, "too many open streams")
		return false
	}
	return true
}

func (h *Handler) releaseStream(r *http.Request) {
	h.streams.Add(-1)
	h.peerStreams.release(peerKey(r))
}

// StreamCount returns the number of HTTP requests the handler is serving:
// open GET streams and POSTs (from their body to their answer), the count
// that MaxStreams bounds.
func (h *Handler) StreamCount() int { return int(h.streams.Load()) }

// readBody reads a POST's body within MaxBodyBytes and BodyReadTimeout.
// On failure it has answered (413, 408 or 400) and returns false. The
// deadline is set on the connection, so w must support
// http.ResponseController's SetReadDeadline (net/http's writers do;
// wrappers must implement Unwrap); otherwise the body is read without one.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	timed := false
	if d := h.opts.BodyReadTimeout; d > 0 {
		timed = rc.SetReadDeadline(time.Now().Add(d)) == nil
	}
	body, err := readLimited(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes), h.opts.MaxBodyBytes, r.ContentLength)
	if timed && err == nil {
		// Streams stay open after the body: no deadline on their reads.
		// After a failed read the deadline stays, so that the connection
		// closes instead of draining a trickled body without one.
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err == nil {
		return body, true
	}
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		writeHTTPError(w, h.exchangeOf(r), http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest,
			(&transport.MessageTooLargeError{Limit: int(h.opts.MaxBodyBytes), Size: int(h.opts.MaxBodyBytes) + 1}).Error())
	case timed && (errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()):
		w.Header().Set("Connection", "close")
		cid := writeHTTPError(w, h.exchangeOf(r), http.StatusRequestTimeout, codeServerError,
			"Request Timeout: the body was not received within BodyReadTimeout ("+h.opts.BodyReadTimeout.String()+")")
		h.refusals.print("transport: request refused: body not received in time",
			slog.Duration("bodyReadTimeout", h.opts.BodyReadTimeout), slog.Int("received", len(body)), correlationAttr(cid))
	default:
		writeHTTPError(w, h.exchangeOf(r), http.StatusBadRequest, codeServerError, "Bad Request: reading the body failed")
	}
	return nil, false
}

// readLimited reads r, which fails beyond limit bytes (http.MaxBytesReader),
// to its end. Its buffer grows as bytes arrive, never beyond limit+1
// bytes: a body that stalls holds about what it sent, and never more than
// its limit. size is the length the body announced (-1: unknown): a small
// body gets a buffer of its size, so that the read to its end fills it
// without growing it.
func readLimited(r io.Reader, limit, size int64) ([]byte, error) {
	first := int64(512)
	if size >= 0 && size < first {
		first = size + 1 // +1: room for the read that meets the end
	}
	buf := make([]byte, 0, min(first, limit+1))
	for {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) && int64(len(buf)) > limit {
			return buf, &http.MaxBytesError{Limit: limit}
		}
	}
}
