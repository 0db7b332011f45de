package streamhttp

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/keelmcp/keel/internal/logclip"
)

// Defaults of HTTPServerOptions: what one connection may cost before it
// is served, while it idles, and while a write to it is stuck.
const (
	// DefaultReadHeaderTimeout is how long a connection may take to send
	// a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultConnIdleTimeout is how long an idle keep-alive connection is
	// kept open for the client's next request.
	DefaultConnIdleTimeout = 60 * time.Second
	// DefaultWriteTimeout is how long one write of a response may block
	// (a client that stops reading): the connection is then closed.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultMaxHeaderBytes bounds a request's header section: 64 KiB.
	DefaultMaxHeaderBytes = 64 << 10
)

// HTTPServerOptions configure NewHTTPServer. Nil means all defaults; the
// zero value of a field selects its default, a negative duration none.
type HTTPServerOptions struct {
	// ReadHeaderTimeout bounds the time to read a request's headers
	// (default DefaultReadHeaderTimeout). The body is bounded by the
	// Handler's BodyReadTimeout.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no request for
	// this long (default DefaultConnIdleTimeout).
	IdleTimeout time.Duration
	// WriteTimeout bounds each write of a response, not the response as a
	// whole: an SSE stream may stay open for hours, but a write that
	// blocks this long (the client stopped reading) fails and the
	// connection closes (default DefaultWriteTimeout). The deadline is
	// renewed before each write and flush through
	// http.ResponseController, so handlers need nothing of their own.
	WriteTimeout time.Duration
	// MaxHeaderBytes bounds a request's header section; a larger one gets
	// 431 (default DefaultMaxHeaderBytes).
	MaxHeaderBytes int
	// Logger receives net/http's own error log (TLS handshake errors,
	// panics in handlers, Accept errors) at level Warn (nil =
	// slog.Default()). Those lines are mostly caused by peers (one for
	// each failed TLS handshake), so they are bounded as refusal logs
	// are: each value cut to 2,048 bytes, and at most
	// DefaultRefusalLogsPerSecond lines a second (a burst of as many;
	// lines beyond are counted in one line a second later).
	Logger *slog.Logger
}

// NewHTTPServer returns an *http.Server for h with the bounds an MCP
// endpoint on an open network needs: a read-header timeout, an idle
// timeout for keep-alive connections, a per-write timeout that spares
// long-lived SSE streams (http.Server's own WriteTimeout would end every
// stream after it, so it stays unset), a header size limit, and
// net/http's error log routed to slog. Set Addr (or call Serve on a
// listener, preferably one from LimitListener, which bounds the number of
// connections) and TLSConfig as usual.
//
//	hs := streamhttp.NewHTTPServer(mux, nil)
//	ln, _ := net.Listen("tcp", ":8080")
//	_ = hs.Serve(streamhttp.LimitListener(ln, nil))
func NewHTTPServer(h http.Handler, opts *HTTPServerOptions) *http.Server {
	var o HTTPServerOptions
	if opts != nil {
		o = *opts
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultConnIdleTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.WriteTimeout > 0 {
		h = &writeDeadlines{next: h, timeout: o.WriteTimeout}
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: max(o.ReadHeaderTimeout, 0),
		IdleTimeout:       max(o.IdleTimeout, 0),
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logclip.NewHandler(o.Logger.Handler(), 0, DefaultRefusalLogsPerSecond), slog.LevelWarn),
	}
}

// writeDeadlines gives every write of a response a deadline of its own:
// timeout from the write (renewed at most every timeout/8, so that a
// stream of small writes does not reset its deadline each time).
type writeDeadlines struct {
	next    http.Handler
	timeout time.Duration
}

func (d *writeDeadlines) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: d.timeout}
	dw.renew(true) // a deadline of an earlier request on the connection must not apply
	defer dw.renew(true)
	d.next.ServeHTTP(dw, r)
}

// deadlineWriter renews the write deadline before writes and flushes.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	set     time.Time // when the deadline was last set
}

func (dw *deadlineWriter) renew(force bool) {
	now := time.Now()
	if force || now.Sub(dw.set) >= dw.timeout/8 {
		dw.set = now
		_ = dw.rc.SetWriteDeadline(now.Add(dw.timeout))
	}
}

func (dw *deadlineWriter) WriteHeader(code int) {
	dw.renew(false)
	dw.ResponseWriter.WriteHeader(code)
}

func (dw *deadlineWriter) Write(b []byte) (int, error) {
	dw.renew(false)
	return dw.ResponseWriter.Write(b)
}

// FlushError flushes through the ResponseController, within the deadline.
func (dw *deadlineWriter) FlushError() error {
	dw.renew(false)
	return dw.rc.Flush()
}

// Flush implements http.Flusher.
func (dw *deadlineWriter) Flush() { _ = dw.FlushError() }

// Unwrap gives http.ResponseController the writer underneath (read
// deadlines, hijacking).
func (dw *deadlineWriter) Unwrap() http.ResponseWriter { return dw.ResponseWriter }
