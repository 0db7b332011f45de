package streamhttp

import (
	"bytes"
	"context"
	"fmt"
	"github.com/keelmcp/keel/transport"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/keelmcp/keel/internal/jsonrpc"
)

// ClientOptions configures NewClientTransport (nil = defaults).
type ClientOptions struct {
	// HTTPClient sends the requests (nil = http.DefaultClient). Its
	// Timeout, if any, bounds SSE streams too: leave it zero.
	HTTPClient *http.Client
	// Header is added to every request (e.g. a User-Agent).
	Header http.Header
	// BearerToken, if set, is sent as "Authorization: Bearer <token>".
	BearerToken string
	// TokenSource, if set, is asked for the bearer token before each
	// request (it caches and refreshes); it takes precedence over
	// BearerToken.
	TokenSource func(ctx context.Context) (string, error)
	// DisableGETStream keeps the client from opening the GET stream for
	// server-initiated messages after initialization.
	DisableGETStream bool
	// MaxMessageBytes limits one incoming message (default
	// transport.DefaultMaxMessageBytes).
	MaxMessageBytes int
	// MaxRetries bounds consecutive failed reconnections of a dropped SSE
	// stream (default 3); RetryDelay is the wait before the first one
	// unless the server sent a retry interval (default 1s), doubled after
	// each failure.
	MaxRetries int
	RetryDelay time.Duration
	// Logger receives diagnostics (nil = slog.Default()).
	Logger *slog.Logger
}

// ClientTransport is the client side of the streamable HTTP transport
// (Kind "http"): each Write POSTs one message to the endpoint; responses
// arrive as a JSON body or an SSE stream and are returned by Read, with
// the messages of the GET stream the transport opens after initialization.
// It keeps the Mcp-Session-Id the server issues, sends the
// MCP-Protocol-Version it learns from the initialize result, resumes
// dropped SSE streams with Last-Event-ID, and ends the session with DELETE
// on Close. Create it with NewClientTransport.
type ClientTransport struct {
	url    string
	opts   ClientOptions
	client *http.Client
	log    *slog.Logger

	in   chan []byte
	done chan struct{}
	ctx  context.Context // ends on Close: cancels streams
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu        sync.Mutex
	sessionID string
	version   string
	initID    string // raw id of the initialize request awaiting its response
	getFor    string // the session the GET stream runs for ("" = none)
	ended     bool   // the server ended the session: only the handshake of a new one may be sent
	closed    bool
	// streams holds the SSE answers of modern requests by raw id: a
	// modern notifications/cancelled closes its request's stream, which
	// is how a 2026-07-28 client over HTTP cancels (subscriptions/listen).
	streams map[string]io.Closer
	// listIDs are the raw ids of modern tools/list requests awaiting
	// their answer; paramHeaders the x-mcp-header annotations the answers
	// named, by tool: a modern tools/call of such a tool sends
	// Mcp-Param-{Name} headers.
	listIDs      map[string]bool
	paramHeaders map[string][]ParamHeader
}

var _ transport.Transport = (*ClientTransport)(nil)

// NewClientTransport returns a transport to the MCP endpoint url (e.g.
// "http://127.0.0.1:8080/mcp"); opts may be nil. No request is sent before
// the first Write.
func NewClientTransport(url string, opts *ClientOptions) *ClientTransport {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = transport.DefaultMaxMessageBytes
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 3
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := o.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	ctx, stop := context.WithCancel(context.Background())
	return &ClientTransport{url: url, opts: o, client: c, log: o.Logger,
		in: make(chan []byte, 16), done: make(chan struct{}), ctx: ctx, stop: stop}
}

// Kind returns "http".
func (t *ClientTransport) Kind() string { return "http" }

// SessionID returns the Mcp-Session-Id the server issued ("" if none yet,
// or for a stateless server).
func (t *ClientTransport) SessionID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessionID
}

// Read returns the next message from the server.
func (t *ClientTransport) Read(ctx context.Context) ([]byte, error) {
	// Closed wins over a queued message, so Read after Close is always EOF.
	select {
	case <-t.done:
		return nil, io.EOF
	default:
	}
	select {
	case m := <-t.in:
		return m, nil
	case <-t.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write POSTs msg and returns once the server has accepted it (the status
// line and headers arrived); a JSON or SSE answer is then read in the
// background and returned by Read. Statuses other than 200 and 202 are
// returned as *StatusError. A 404 for the session matches
// transport.ErrSessionNotFound: the transport forgets the session, and
// until a new handshake (initialize, then notifications/initialized)
// completes, Write refuses other messages with that error, unsent.
func (t *ClientTransport) Write(ctx context.Context, msg []byte) error {
	select {
	case <-t.done:
		return transport.ErrClosed
	default:
	}
	out, err := peekOutgoing(msg)
	if err != nil {
		return err
	}
	t.mu.Lock()
	if out.request && out.method == "initialize" {
		t.initID = out.ids[0]
	} else if t.ended && out.method != "notifications/initialized" {
		t.mu.Unlock()
		return errSessionEnded
	}
	// The session the message is sent in is the one checked above: read
	// later, a 404 answering another message in between would have
	// cleared it, and the message would go out with no session id at all
	// (400) instead of failing with ErrSessionNotFound, which the Client
	// retries in the new session.
	sid, ver := t.sessionID, t.version
	t.mu.Unlock()
	body := bytes.Clone(msg)
	var resp *http.Response
	mod, modern := modernOutgoing(msg)
	if modern && mod.method == "notifications/cancelled" {
		t.closeStream(mod.cancelled)
		return nil // over HTTP the stream is the request: closing it cancels
	}
	if modern { // 2026-07-28: no session; the routing headers name the request
		hdr := mod.headers()
		t.mu.Lock()
		switch {
		case mod.method == "tools/list" && out.request:
			if t.listIDs == nil {
				t.listIDs = map[string]bool{}
			}
			t.listIDs[out.ids[0]] = true
		case mod.method == "tools/call":
			hdr = append(hdr, paramHeaderValues(t.paramHeaders[mod.name], mod.args)...)
		}
		t.mu.Unlock()
		resp, err = t.doIn(ctx, "", mod.version, http.MethodPost, body, "", hdr...)
	} else {
		resp, err = t.doIn(ctx, sid, ver, http.MethodPost, body, "")
	}
	if err != nil {
		return err
	}
	if modern && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound) &&
		mediaType(resp) == "application/json" {
		// A modern request's JSON-RPC error travels with its HTTP status:
		// hand the error response to the reader like any other.
		resp.StatusCode = http.StatusOK
	}
	t.noteSession(resp)
	switch {
	case resp.StatusCode == http.StatusAccepted:
		drain(resp)
		if out.method == "notifications/initialized" {
			t.mu.Lock()
			t.ended = false // the new session is ready
			t.mu.Unlock()
			t.startGET()
		}
		return nil
	case resp.StatusCode == http.StatusNotFound && resp.Request.Header.Get(headerSessionID) != "":
		err := statusError(resp)
		err.sessionEnded = true
		t.forgetSession(resp.Request.Header.Get(headerSessionID))
		return err
	case resp.StatusCode != http.StatusOK:
		return statusError(resp)
	}
	var pending []string
	if out.request {
		pending = out.ids
	}
	switch mediaType(resp) {
	case "application/json":
		defer drain(resp)
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.opts.MaxMessageBytes)+1))
		if err != nil {
			return fmt.Errorf("transport: reading the response: %w", err)
		}
		if len(data) > t.opts.MaxMessageBytes {
			return &transport.MessageTooLargeError{Limit: t.opts.MaxMessageBytes, Size: len(data)}
		}
		if len(bytes.TrimSpace(data)) > 0 && !t.deliverSoon(data) {
			return transport.ErrClosed
		}
		return nil
	case "text/event-stream":
		if modern && len(pending) == 1 {
			t.mu.Lock()
			if t.streams == nil {
				t.streams = map[string]io.Closer{}
			}
			t.streams[pending[0]] = resp.Body
			t.mu.Unlock()
		}
		if !t.goBackground(func() {
			t.readStream(resp, pending)
			if modern && len(pending) == 1 {
				t.mu.Lock()
				delete(t.streams, pending[0])
				t.mu.Unlock()
			}
		}) {
			drain(resp)
			return transport.ErrClosed
		}
		return nil
	default:
		drain(resp)
		return fmt.Errorf("transport: unexpected Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

// do sends one request. ctx bounds the wait for the response headers only;
// the body is read under the transport's own context (ended by Close).
func (t *ClientTransport) do(ctx context.Context, method string, body []byte, lastEventID string) (*http.Response, error) {
	t.mu.Lock()
	sid, v := t.sessionID, t.version
	t.mu.Unlock()
	return t.doIn(ctx, sid, v, method, body, lastEventID)
}

// doIn is do within the given session id and protocol version (either ""
// for none).
func (t *ClientTransport) doIn(ctx context.Context, sid, v, method string, body []byte, lastEventID string, extra ...string) (*http.Response, error) {
	rctx, cancel := context.WithCancel(t.ctx)
	stop := context.AfterFunc(ctx, cancel)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, t.url, rd)
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	for k, vs := range t.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if sid != "" {
		req.Header.Set(headerSessionID, sid)
	}
	if v != "" {
		req.Header.Set(headerProtocolVersion, v)
	}
	if lastEventID != "" {
		req.Header.Set(headerLastEventID, lastEventID)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	token := t.opts.BearerToken
	if t.opts.TokenSource != nil {
		if token, err = t.opts.TokenSource(ctx); err != nil {
			stop()
			cancel()
			return nil, fmt.Errorf("transport: getting the bearer token: %w", err)
		}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := t.client.Do(req)
	if !stop() { // ctx ended while waiting
		cancel()
		if resp != nil {
			drain(resp)
		}
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

func mediaType(resp *http.Response) string {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt
}

// StatusError is returned by the HTTP client transport for a response
// with an unexpected status: 401 and 403 (with the WWW-Authenticate header
// of the challenge), 404 (session not found), 4xx and 5xx.
type StatusError struct {
	StatusCode int
	// WWWAuthenticate is the challenge of a 401 or 403 response.
	WWWAuthenticate string
	// Body is the start of the response body (at most 4 KiB).
	Body string

	sessionEnded bool // a 404 to a request that carried a session id
}

// Unwrap returns transport.ErrSessionNotFound for a 404 answering a request
// that carried a session id (the session expired or was terminated), and
// nil otherwise.
func (e *StatusError) Unwrap() error {
	if e.sessionEnded {
		return transport.ErrSessionNotFound
	}
	return nil
}

// Error implements error.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("transport: HTTP %d", e.StatusCode)
	if e.WWWAuthenticate != "" {
		msg += " (WWW-Authenticate: " + e.WWWAuthenticate + ")"
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

func statusError(resp *http.Response) *StatusError {
	defer drain(resp)
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return &StatusError{StatusCode: resp.StatusCode, WWWAuthenticate: resp.Header.Get("WWW-Authenticate"), Body: string(bytes.TrimSpace(b))}
}

func (t *ClientTransport) noteSession(resp *http.Response) {
	if id := resp.Header.Get(headerSessionID); id != "" {
		t.mu.Lock()
		if t.sessionID == "" {
			t.sessionID = id
		}
		t.mu.Unlock()
	}
}

// errSessionEnded is what Write returns, without sending, between a 404
// for the session and the end of a new session's handshake (initialize,
// then notifications/initialized).
var errSessionEnded = fmt.Errorf("%w: the server ended it; send initialize to start a new one", transport.ErrSessionNotFound)

// forgetSession drops the session sid after the server answered 404 for
// it, unless a newer one replaced it already: the next initialize starts
// afresh (no session id, no protocol version) and its
// notifications/initialized opens a new GET stream.
func (t *ClientTransport) forgetSession(sid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessionID != sid {
		return
	}
	t.sessionID, t.version, t.ended = "", "", true
	t.log.Debug("transport: the server ended the session", "session", sid)
}

// deliverSoon queues a JSON answer for Read without waiting for room: when
// the queue is full (the GET stream filled it) the answer is queued from a
// background goroutine, so a caller that writes and reads on one goroutine
// cannot block on its own answer. It reports false once closed.
func (t *ClientTransport) deliverSoon(msg []byte) bool {
	t.learn(msg)
	select {
	case t.in <- msg:
		return true
	default:
		return t.goBackground(func() { t.enqueue(msg) })
	}
}

// deliver queues one message (or batch) for Read, learning the protocol
// revision from the initialize result; it waits for room in the queue.
func (t *ClientTransport) deliver(msg []byte) bool {
	t.learn(msg)
	return t.enqueue(msg)
}

// enqueue waits for room in Read's queue, or for Close.
func (t *ClientTransport) enqueue(msg []byte) bool {
	select {
	case t.in <- msg:
		return true
	case <-t.done:
		return false
	}
}

// learn records the protocol revision from the answer to initialize, and
// the x-mcp-header annotations of the tools a modern tools/list names.
func (t *ClientTransport) learn(msg []byte) {
	t.mu.Lock()
	initID, lists := t.initID, len(t.listIDs)
	t.mu.Unlock()
	if lists > 0 {
		t.learnTools(msg)
	}
	if initID != "" {
		if out, err := peekOutgoing(msg); err == nil && out.response && len(out.ids) == 1 && out.ids[0] == initID {
			v := resultProtocolVersion(msg)
			t.mu.Lock()
			t.initID = ""
			if v != "" {
				t.version = v
			}
			t.mu.Unlock()
		}
	}
}

// readStream reads the SSE answer to a POST until the responses to its
// requests (pending ids) have arrived; if the stream drops before, it
// resumes with GET and Last-Event-ID.
func (t *ClientTransport) readStream(resp *http.Response, pending []string) {
	want := map[string]bool{}
	for _, id := range pending {
		want[id] = true
	}
	lastID := ""
	retry := t.opts.RetryDelay
	failures := 0
	for {
		progressed := t.consume(resp, &lastID, &retry, func(msg []byte) bool {
			if out, err := peekOutgoing(msg); err == nil && out.response {
				for _, id := range out.ids {
					delete(want, id)
				}
			}
			return len(want) == 0
		})
		if len(want) == 0 || t.ctx.Err() != nil {
			return
		}
		if progressed {
			failures = 0
		}
		if lastID == "" || failures >= t.opts.MaxRetries {
			t.failPending(want, "the server's SSE stream ended before the response")
			return
		}
		delay := retry << failures
		failures++
		if !t.sleep(delay) {
			return
		}
		var err error
		resp, err = t.do(t.ctx, http.MethodGet, nil, lastID)
		if err != nil {
			t.log.Debug("transport: resuming an SSE stream failed", "error", err)
			resp = nil
		} else if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
			err := statusError(resp)
			t.log.Debug("transport: resuming an SSE stream refused", "error", err)
			if err.StatusCode/100 == 4 {
				t.failPending(want, "resuming the server's SSE stream failed: "+err.Error())
				return
			}
			resp = nil
		}
		if resp == nil {
			continue
		}
	}
}

// consume reads events from resp until it ends or done says stop,
// delivering messages and tracking the last event id and retry interval.
// It reports whether any event arrived.
func (t *ClientTransport) consume(resp *http.Response, lastID *string, retry *time.Duration, done func([]byte) bool) bool {
	if resp == nil {
		return false
	}
	defer resp.Body.Close()
	rd := newSSEReader(resp.Body, t.opts.MaxMessageBytes)
	progressed := false
	for {
		ev, err := rd.next()
		if err != nil {
			if err != io.EOF && t.ctx.Err() == nil {
				t.log.Debug("transport: SSE stream ended", "error", err)
			}
			return progressed
		}
		progressed = true
		if ev.hasID {
			*lastID = ev.id
		}
		if ev.retry > 0 {
			*retry = ev.retry
		}
		if len(bytes.TrimSpace(ev.data)) == 0 || (ev.name != "" && ev.name != "message") {
			continue
		}
		if !t.deliver(ev.data) {
			return progressed
		}
		if done != nil && done(ev.data) {
			return progressed
		}
	}
}

// failPending answers requests whose responses can no longer arrive with a
// JSON-RPC error, so that their callers do not wait forever.
// closeStream closes the SSE answer of the modern request with raw id id,
// if it is still open.
func (t *ClientTransport) closeStream(id string) {
	t.mu.Lock()
	c := t.streams[id]
	delete(t.streams, id)
	t.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

func (t *ClientTransport) failPending(want map[string]bool, why string) {
	for id := range want {
		msg, err := jsonrpc.AppendError(nil, []byte(id), codeServerError, "transport: "+why, nil)
		if err == nil {
			t.deliver(msg)
		}
	}
}

func (t *ClientTransport) sleep(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// startGET opens the GET stream for server-initiated messages, once per
// session.
func (t *ClientTransport) startGET() {
	if t.opts.DisableGETStream {
		return
	}
	t.mu.Lock()
	sid, v := t.sessionID, t.version
	if t.getFor == sid || t.closed || sid == "" {
		t.mu.Unlock()
		return
	}
	t.getFor = sid
	t.mu.Unlock()
	t.goBackground(func() { t.runGET(sid, v) })
}

// goBackground runs fn on a goroutine Close waits for, unless the
// transport is closed.
func (t *ClientTransport) goBackground(fn func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		fn()
	}()
	return true
}

// runGET keeps the GET stream of session sid open, resuming it after
// drops, until Close, a 405 (the server offers no GET stream), a 404 (the
// session ended) or a newer session.
func (t *ClientTransport) runGET(sid, v string) {
	defer func() {
		t.mu.Lock()
		if t.getFor == sid {
			t.getFor = ""
		}
		t.mu.Unlock()
	}()
	lastID := ""
	retry := t.opts.RetryDelay
	failures := 0
	for t.ctx.Err() == nil && t.SessionID() == sid {
		resp, err := t.doIn(t.ctx, sid, v, http.MethodGet, nil, lastID)
		switch {
		case err != nil:
			t.log.Debug("transport: GET stream failed", "error", err)
		case resp.StatusCode == http.StatusOK && mediaType(resp) == "text/event-stream":
			if t.consume(resp, &lastID, &retry, nil) {
				failures = 0
			}
		case resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusNotFound:
			drain(resp)
			return
		default:
			t.log.Debug("transport: GET stream refused", "error", statusError(resp))
		}
		if failures >= t.opts.MaxRetries+1 {
			t.log.Warn("transport: giving up the GET stream after repeated failures")
			return
		}
		delay := retry << failures
		failures++
		if !t.sleep(delay) {
			return
		}
	}
}

// Close ends the session with DELETE (when the server issued one), stops
// the streams and makes Read return io.EOF.
func (t *ClientTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	sid := t.sessionID
	t.mu.Unlock()
	if sid != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if resp, err := t.do(ctx, http.MethodDelete, nil, ""); err == nil {
			drain(resp)
		}
		cancel()
	}
	t.stop()
	close(t.done)
	t.wg.Wait()
	return nil
}
