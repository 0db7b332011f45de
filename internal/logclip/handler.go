package logclip

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// Defaults of Handler.
const (
	// DefaultMaxValue is how many bytes of one string value (the message,
	// an attribute, an error's text, a stack) a line carries.
	DefaultMaxValue = 2048
	// DefaultLinesPerSecond is how many lines one scope writes a second
	// (with a burst of as many), whatever their level.
	DefaultLinesPerSecond = 100
)

// Handler is a slog.Handler that bounds what reaches next: every string
// value (the message; string attributes, in groups too; the text of an
// error value; bytes) is cut to maxValue bytes (Clip), and the lines of
// one scope are rate-limited (Bucket), at every level. A scope is the
// handler NewHandler returns, or one Scope made: WithAttrs and WithGroup
// share their scope's limit. Lines suppressed by the limit are counted and
// reported in one line a second later.
type Handler struct {
	next     slog.Handler
	base     slog.Handler // next as NewHandler got it: where a new scope reports
	maxValue int
	lim      *Limiter
	global   *Limiter // a budget shared with other scopes (Peers), or nil
}

// NewHandler returns a Handler around next: maxValue bytes of each string
// value (<= 0: DefaultMaxValue), linesPerSecond lines a second (0:
// DefaultLinesPerSecond; negative: no limit).
func NewHandler(next slog.Handler, maxValue, linesPerSecond int) *Handler {
	if maxValue <= 0 {
		maxValue = DefaultMaxValue
	}
	if linesPerSecond == 0 {
		linesPerSecond = DefaultLinesPerSecond
	}
	return newScope(next, next, maxValue, linesPerSecond)
}

// scope is the Handler of a scope and its rate limit, in one allocation;
// it reports the lines it suppressed to base.
type scope struct {
	h    Handler
	lim  Limiter
	base slog.Handler
}

func newScope(next, base slog.Handler, maxValue, perSecond int) *Handler {
	s := &scope{base: base}
	s.lim = Limiter{perSecond: perSecond, report: s, bucket: NewBucket(perSecond)}
	s.h = Handler{next: next, base: base, maxValue: maxValue, lim: &s.lim}
	return &s.h
}

// Report implements Reporter: one line counting the suppressed lines.
func (s *scope) Report(n int64) {
	r := slog.NewRecord(time.Now(), slog.LevelWarn, "log lines suppressed (rate limit)", 0)
	r.AddAttrs(slog.Int64("suppressed", n), slog.Int("perSecond", s.lim.perSecond))
	_ = s.base.Handle(context.Background(), r)
}

// Scope returns l with attrs added and, when l's handler is a Handler, a
// rate limit of its own: one scope per peer (a session, a connection).
func Scope(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	h, ok := l.Handler().(*Handler)
	if !ok {
		return slog.New(l.Handler().WithAttrs(attrs))
	}
	return slog.New(newScope(h.next.WithAttrs(h.clipAttrs(attrs)), h.base, h.maxValue, h.lim.perSecond))
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.lim.Allow() || (h.global != nil && !h.global.Allow()) {
		return nil
	}
	needs := len(r.Message) > h.maxValue
	if !needs {
		r.Attrs(func(a slog.Attr) bool {
			needs = h.attrNeeds(a.Value, 0)
			return !needs
		})
	}
	if !needs {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, Clip(r.Message, h.maxValue), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.clipAttr(a, 0))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler: the attributes are clipped once,
// here; the scope is shared.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(h.clipAttrs(attrs)), base: h.base, maxValue: h.maxValue, lim: h.lim, global: h.global}
}

// clipAttrs returns attrs, or a clipped copy when one needs it.
func (h *Handler) clipAttrs(attrs []slog.Attr) []slog.Attr {
	needs := false
	for _, a := range attrs {
		if needs = len(a.Key) > h.maxValue || h.attrNeeds(a.Value, 0); needs {
			break
		}
	}
	if !needs {
		return attrs
	}
	c := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		c[i] = h.clipAttr(a, 0)
	}
	return c
}

// WithGroup implements slog.Handler; the scope is shared.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(Clip(name, h.maxValue)), base: h.base, maxValue: h.maxValue, lim: h.lim, global: h.global}
}

// maxGroupDepth bounds the nesting of groups walked; deeper ones pass as
// they are.
const maxGroupDepth = 16

func (h *Handler) attrNeeds(v slog.Value, depth int) bool {
	switch v.Kind() {
	case slog.KindString:
		return len(v.String()) > h.maxValue
	case slog.KindGroup:
		if depth >= maxGroupDepth {
			return false
		}
		for _, a := range v.Group() {
			if len(a.Key) > h.maxValue || h.attrNeeds(a.Value, depth+1) {
				return true
			}
		}
	case slog.KindLogValuer:
		return true // resolved when clipped
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return x != nil && len(x.Error()) > h.maxValue
		case []byte:
			return len(x) > h.maxValue
		}
	}
	return false
}

func (h *Handler) clipAttr(a slog.Attr, depth int) slog.Attr {
	a.Key = Clip(a.Key, h.maxValue)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > h.maxValue {
			a.Value = slog.StringValue(Clip(s, h.maxValue))
			return a
		}
	case slog.KindGroup:
		if depth < maxGroupDepth {
			g := v.Group()
			c := make([]slog.Attr, len(g))
			for i, ga := range g {
				c[i] = h.clipAttr(ga, depth+1)
			}
			a.Value = slog.GroupValue(c...)
			return a
		}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			if x != nil {
				if s := x.Error(); len(s) > h.maxValue {
					a.Value = slog.StringValue(Clip(s, h.maxValue))
					return a
				}
			}
		case []byte:
			if len(x) > h.maxValue {
				a.Value = slog.StringValue(string(x[:h.maxValue]) + "...(" + strconv.Itoa(len(x)) + " bytes)")
				return a
			}
		}
	}
	a.Value = v
	return a
}

var _ slog.Handler = (*Handler)(nil)
