package mcp

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/keelmcp/keel/internal/logclip"
)

// Logging to the client (capability logging, ServerOptions.Logging): the
// client picks a threshold with logging/setLevel; until it does, the
// session's level is ServerOptions.LogLevel (default info). Messages below the
// threshold are dropped on the server, before anything is encoded.

// logSendTimeout bounds how long sending one log message may block a
// handler when the client reads slowly; a message that cannot be written in
// time is dropped.
const logSendTimeout = 250 * time.Millisecond

// levelsBySeverity lists the levels by RFC 5424 severity (0 = emergency).
var levelsBySeverity = [...]LoggingLevel{LoggingLevelEmergency, LoggingLevelAlert, LoggingLevelCritical,
	LoggingLevelError, LoggingLevelWarning, LoggingLevelNotice, LoggingLevelInfo, LoggingLevelDebug}

// logEnabledFor reports whether a message of level l about the request
// ctx belongs to reaches the client: one at or above the request's level
// (Request.LogLevel: a 2026-07-28 request's own, none without one; a 2025
// request's session's), none once the request was answered with a task
// (there is nothing to send on). Outside a request, the session's level
// applies (none for a connection that serves 2026-07-28 requests only).
func (ss *Session) logEnabledFor(ctx context.Context, l LoggingLevel) bool {
	if !ss.server.opts.Logging {
		return false
	}
	req := RequestFromContext(ctx)
	if req == nil {
		// Outside a request: an initialized 2025 session's level only.
		return sessionChannel(ss) && sessionLogEnabled(ss, l)
	}
	if c := ToolCallFromContext(ctx); c != nil && c.run.isTask() {
		return false
	}
	level := req.LogLevel()
	return level != "" && l.AtLeast(level)
}

// Log sends the client a notifications/message of the given level, logger
// name (may be empty) and data (any JSON-encodable value: a string, a map,
// a struct). It sends nothing, and returns nil, when the server does not
// declare logging (ServerOptions.Logging) or level is below the level
// that applies (see Request.LogLevel): about a 2026-07-28 request (ctx),
// that request's own logLevel; otherwise the session's level, and only on
// an initialized 2025 session (outside a request, any other connection,
// and every connection of a server built with the tag keel_omit2025, is
// sent nothing). It
// waits at most a short while (and never past ctx) for a slow client; an
// error reports a message that was not sent.
func (ss *Session) Log(ctx context.Context, level LoggingLevel, logger string, data any) error {
	if !level.Valid() {
		return errors.New("mcp: unknown logging level " + quote(string(level)))
	}
	if !ss.logEnabledFor(ctx, level) {
		return nil
	}
	return ss.sendLog(ctx, &LoggingMessageNotificationParams{Level: level, Logger: logger, Data: data})
}

func (ss *Session) sendLog(ctx context.Context, p *LoggingMessageNotificationParams) error {
	if c := ToolCallFromContext(ctx); c != nil && c.task != nil && p.Meta == nil {
		p.Meta = relatedTaskMeta(c.task.id) // a log message of a task (task_server.go)
	}
	ctx, cancel := context.WithTimeout(ctx, logSendTimeout)
	defer cancel()
	return ss.conn.notify(ctx, notificationMessage, p)
}

var discardLogger = slog.New(slog.DiscardHandler)

// ClientLogger returns a logger whose records go to the client of the
// request ctx belongs to, as notifications/message (see
// Session.LogHandler). Inside a tools/call the logger is named after the
// tool and every record carries the call's correlationId and runId. Outside
// a Server, or when the server does not declare logging, it discards
// everything.
//
//	mcp.ClientLogger(ctx).Info("fetching", "url", u)
func ClientLogger(ctx context.Context) *slog.Logger {
	ss := SessionFromContext(ctx)
	if ss == nil || !ss.server.opts.Logging {
		return discardLogger
	}
	if call := ToolCallFromContext(ctx); call != nil {
		return slog.New(&clientLogHandler{ss: ss, ctx: ctx, logger: call.Name, goas: []groupOrAttrs{{attrs: []slog.Attr{
			slog.String("correlationId", call.CorrelationID), slog.String("runId", call.RunID)}}}})
	}
	return slog.New(&clientLogHandler{ss: ss, ctx: ctx})
}

// LogHandler returns a slog.Handler that sends records to this session's
// client as notifications/message with the given logger name (may be
// empty). A record's level maps to an MCP level with loggingLevelForSlog;
// its data is a JSON object holding "message" and the record's attributes
// (groups as nested objects; time and source are left out). Records below
// the session's level, or all of them when the server does not declare
// logging, are dropped before anything is encoded. Sending never blocks the
// caller for more than a short while: a record that cannot be written in
// time is dropped, and Handle returns the error.
func (ss *Session) logHandler(logger string) slog.Handler {
	return &clientLogHandler{ss: ss, logger: logger}
}

type groupOrAttrs struct {
	group string // a WithGroup, or
	attrs []slog.Attr
}

type clientLogHandler struct {
	ss *Session
	// ctx is the request context ClientLogger was given. Records logged
	// without a context (Info rather than InfoContext: slog passes
	// context.Background) are sent with it, so that they travel on the
	// request's stream (HTTP) and carry its task.
	ctx    context.Context
	logger string
	goas   []groupOrAttrs
}

func (h *clientLogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.ss.logEnabledFor(h.levelContext(), loggingLevelForSlog(l))
}

// levelContext is the context whose request decides the level: the one
// ClientLogger was given (a handler from LogHandler has none: the
// session's level applies).
func (h *clientLogHandler) levelContext() context.Context {
	if h.ctx != nil {
		return h.ctx
	}
	return context.Background()
}

func (h *clientLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	return h.with(groupOrAttrs{attrs: as})
}

func (h *clientLogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(groupOrAttrs{group: name})
}

func (h *clientLogHandler) with(g groupOrAttrs) *clientLogHandler {
	c := *h
	c.goas = append(append(make([]groupOrAttrs, 0, len(h.goas)+1), h.goas...), g)
	return &c
}

func (h *clientLogHandler) Handle(ctx context.Context, r slog.Record) error {
	level := loggingLevelForSlog(r.Level)
	if !h.ss.logEnabledFor(h.levelContext(), level) {
		return nil
	}
	data, err := h.encode(&r)
	if err != nil {
		return err
	}
	if h.ctx != nil && (ctx == nil || ctx == context.Background() || ctx == context.TODO()) {
		ctx = h.ctx
	}
	return h.ss.sendLog(ctx, &LoggingMessageNotificationParams{Level: level, Logger: h.logger, Data: data})
}

// encode returns the record as a JSON object: "message", then the
// handler's attributes and groups, then the record's attributes. Groups
// that would stay empty are left out; a name used twice in one object gets
// a suffix (#2, #3, ...) so that the object stays valid for strict readers.
func (h *clientLogHandler) encode(r *slog.Record) (jsontext.Value, error) {
	goas := h.goas
	if r.NumAttrs() == 0 { // drop trailing groups that would be empty
		for len(goas) > 0 && goas[len(goas)-1].group != "" {
			goas = goas[:len(goas)-1]
		}
	}
	var buf []byte
	e := &objEncoder{enc: jsontext.NewEncoder(&sliceWriter{&buf}, jsontext.AllowInvalidUTF8(true))}
	e.begin()
	e.key("message")
	e.write(jsontext.String(r.Message))
	open := 0
	for _, g := range goas {
		if g.group != "" {
			e.key(g.group)
			e.begin()
			open++
			continue
		}
		for _, a := range g.attrs {
			e.attr(a)
		}
	}
	r.Attrs(func(a slog.Attr) bool { e.attr(a); return true })
	for range open {
		e.end()
	}
	e.end()
	if e.err != nil {
		return nil, e.err
	}
	for len(buf) > 0 && buf[len(buf)-1] == '\n' { // the encoder ends a top-level value with a newline
		buf = buf[:len(buf)-1]
	}
	return jsontext.Value(buf), nil
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// objEncoder writes nested JSON objects and keeps their member names unique.
type objEncoder struct {
	enc  *jsontext.Encoder
	seen [][]string // names used in each open object
	err  error
}

func (e *objEncoder) write(t jsontext.Token) {
	if e.err == nil {
		e.err = e.enc.WriteToken(t)
	}
}

func (e *objEncoder) begin() { e.write(jsontext.BeginObject); e.seen = append(e.seen, nil) }

func (e *objEncoder) end() { e.write(jsontext.EndObject); e.seen = e.seen[:len(e.seen)-1] }

func (e *objEncoder) key(k string) {
	names := &e.seen[len(e.seen)-1]
	name := k
	for n := 2; containsString(*names, name); n++ {
		name = k + "#" + strconv.Itoa(n)
	}
	*names = append(*names, name)
	e.write(jsontext.String(name))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (e *objEncoder) attr(a slog.Attr) {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup { // slog: ignore attrs with an empty key
		return
	}
	switch v.Kind() {
	case slog.KindGroup:
		as := v.Group()
		if len(as) == 0 {
			return
		}
		if a.Key == "" { // inline the group's attributes
			for _, g := range as {
				e.attr(g)
			}
			return
		}
		e.key(a.Key)
		e.begin()
		for _, g := range as {
			e.attr(g)
		}
		e.end()
		return
	}
	e.key(a.Key)
	switch v.Kind() {
	case slog.KindString:
		e.write(jsontext.String(v.String()))
	case slog.KindInt64:
		e.write(jsontext.Int(v.Int64()))
	case slog.KindUint64:
		e.write(jsontext.Uint(v.Uint64()))
	case slog.KindFloat64:
		e.write(jsontext.Float(v.Float64())) // NaN and ±Inf are written as strings
	case slog.KindBool:
		e.write(jsontext.Bool(v.Bool()))
	case slog.KindDuration:
		e.write(jsontext.String(v.Duration().String()))
	case slog.KindTime:
		e.write(jsontext.String(v.Time().Format(time.RFC3339Nano)))
	default:
		x := v.Any()
		if err, ok := x.(error); ok {
			e.write(jsontext.String(err.Error()))
			return
		}
		b, err := json.Marshal(x)
		if err != nil {
			e.write(jsontext.String(v.String()))
			return
		}
		if e.err == nil {
			e.err = e.enc.WriteValue(b)
		}
	}
}

// peerLog is the log handler of a per-request session of a known peer:
// its lines count against the peer's budget (logclip.Peers), which is
// looked up (and leased) when the first line is written or a scope is
// derived, not for every request. It lives in the Session.
type peerLog struct {
	peers *logclip.Peers
	key   string
	base  slog.Handler // the server's: Enabled asks it
	log   slog.Logger  // the logger over this handler (start)

	mu    sync.Mutex
	h     slog.Handler // the peer's scope, once looked up
	lease logclip.Lease
	ended bool // release ran: a scope looked up later is not leased
}

// start sets up p for peer key and returns its logger.
func (p *peerLog) start(peers *logclip.Peers, key string, base slog.Handler) *slog.Logger {
	p.peers, p.key, p.base = peers, key, base
	p.log = *slog.New(p)
	return &p.log
}

// scope returns the peer's scope, looking it up the first time.
func (p *peerLog) scope() slog.Handler {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.h == nil {
		l, lease := p.peers.Scope(p.key)
		p.h = l.Handler()
		if p.ended {
			lease.Release() // a handler that ran on after its request: no lease is kept
		} else {
			p.lease = lease
		}
	}
	return p.h
}

// release ends the lease on the peer's budget, if one was taken.
func (p *peerLog) release() {
	p.mu.Lock()
	lease := p.lease
	p.lease, p.ended = logclip.Lease{}, true
	p.mu.Unlock()
	lease.Release()
}

// Enabled implements slog.Handler: the level is the server's, whatever
// the peer's budget.
func (p *peerLog) Enabled(ctx context.Context, l slog.Level) bool { return p.base.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (p *peerLog) Handle(ctx context.Context, r slog.Record) error { return p.scope().Handle(ctx, r) }

// WithAttrs implements slog.Handler.
func (p *peerLog) WithAttrs(as []slog.Attr) slog.Handler { return p.scope().WithAttrs(as) }

// WithGroup implements slog.Handler.
func (p *peerLog) WithGroup(name string) slog.Handler { return p.scope().WithGroup(name) }
