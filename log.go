package keel

import (
	"context"
	"log/slog"
	"slices"
)

// RedactOptions configures NewRedactingHandler. The zero value and nil both
// mean: redact DefaultRedactKeys and sanitize.
type RedactOptions struct {
	// Keys is the denylist of attribute keys, map keys and struct field
	// names (their JSON names) whose values are replaced by RedactedValue.
	// Matching is exact but case-insensitive. nil means DefaultRedactKeys();
	// an empty non-nil slice redacts nothing (sanitization still applies).
	// The slice is copied.
	Keys []string
}

// NewRedactingHandler returns a slog.Handler that redacts and sanitizes every
// record before passing it to next.
//
// Redaction: the value of every attribute whose key is in the denylist
// (opts.Keys, case-insensitive) is replaced by RedactedValue, at any depth:
// inside slog.Group attributes, inside map, slice, array and struct values
// (see Redact for how each kind is walked), inside slog.LogValuer values
// (resolved first) and inside raw JSON values. A key in the denylist hides its
// whole value, group or map included. Attributes added with WithAttrs are
// redacted once, when added. A group opened with WithGroup whose name is in the
// denylist has the value of every attribute logged inside it redacted.
//
// Sanitization: control characters in the message, in attribute and group
// keys and in every string value at any depth (error messages included) are
// escaped as Unicode escapes, see Sanitize.
//
// Copy-on-write: the record, its attributes and the values they refer to are
// never modified; what changes is rebuilt (maps and structs as
// map[string]any, slices as []any) and what does not is shared. A record
// that needs no change is passed on as is, and attributes of scalar kinds
// (strings, numbers, bools, times, durations) are checked without allocating.
//
// NewRedactingHandler panics if next is nil.
func NewRedactingHandler(next slog.Handler, opts *RedactOptions) slog.Handler {
	if next == nil {
		panic("keel: NewRedactingHandler: nil next handler")
	}
	keys := defaultKeySet
	if opts != nil && opts.Keys != nil {
		keys = newKeySet(opts.Keys)
	}
	return &redactingHandler{next: next, keys: keys}
}

// redactingHandler is the slog.Handler returned by NewRedactingHandler.
type redactingHandler struct {
	next slog.Handler
	keys *keySet
	// redactAll is set inside a WithGroup whose name is in the denylist:
	// every attribute logged there has its value redacted.
	redactAll bool
}

// Enabled implements slog.Handler.
func (h *redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h *redactingHandler) Handle(ctx context.Context, r slog.Record) error {
	w := walker{keys: h.keys, sanitize: true}
	msg := Sanitize(r.Message)
	changed := len(msg) != len(r.Message)
	if !changed {
		r.Attrs(func(a slog.Attr) bool {
			changed = w.attrNeeds(a, h.redactAll, 0)
			return !changed
		})
	}
	if !changed {
		return h.next.Handle(ctx, r)
	}
	nr := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(w.redactAttr(a, h.redactAll, 0))
		return true
	})
	return h.next.Handle(ctx, nr)
}

// WithAttrs implements slog.Handler.
func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	w := walker{keys: h.keys, sanitize: true}
	out := attrs
	for i, a := range attrs {
		if w.attrNeeds(a, h.redactAll, 0) {
			if &out[0] == &attrs[0] {
				out = slices.Clone(attrs)
			}
			out[i] = w.redactAttr(a, h.redactAll, 0)
		}
	}
	return &redactingHandler{next: h.next.WithAttrs(out), keys: h.keys, redactAll: h.redactAll}
}

// WithGroup implements slog.Handler.
func (h *redactingHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &redactingHandler{
		next:      h.next.WithGroup(Sanitize(name)),
		keys:      h.keys,
		redactAll: h.redactAll || h.keys.match(name),
	}
}

// redactsAttr reports whether a's value is replaced as a whole: its key is in
// the denylist, or everything in its group is redacted (groups without a key
// are inlined by slog, so their members are judged one by one instead).
func (w *walker) redactsAttr(a slog.Attr, redactAll bool) bool {
	if redactAll {
		if a.Key == "" {
			return a.Value.Kind() != slog.KindGroup && !a.Equal(slog.Attr{})
		}
		return true
	}
	return w.keys.match(a.Key)
}

// attrNeeds reports whether redactAttr would change a.
func (w *walker) attrNeeds(a slog.Attr, redactAll bool, depth int) bool {
	if needsSanitize(a.Key) {
		return true
	}
	v := a.Value
	if v.Kind() == slog.KindLogValuer {
		return true
	}
	if w.redactsAttr(a, redactAll) {
		return v.Kind() != slog.KindString || v.String() != RedactedValue
	}
	switch v.Kind() {
	case slog.KindString:
		return needsSanitize(v.String())
	case slog.KindGroup:
		if depth >= maxRedactDepth {
			return true
		}
		for _, ga := range v.Group() {
			if w.attrNeeds(ga, redactAll, depth+1) {
				return true
			}
		}
		return false
	case slog.KindAny:
		return w.needsAny(v.Any(), depth)
	}
	return false
}

// redactAttr returns a redacted and sanitized; a is not modified.
func (w *walker) redactAttr(a slog.Attr, redactAll bool, depth int) slog.Attr {
	key := Sanitize(a.Key)
	v := a.Value.Resolve()
	a.Value = v
	if w.redactsAttr(a, redactAll) {
		return slog.String(key, RedactedValue)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(key, Sanitize(v.String()))
	case slog.KindGroup:
		if depth >= maxRedactDepth {
			return slog.String(key, truncatedValue)
		}
		group := v.Group()
		out := make([]slog.Attr, len(group))
		for i, ga := range group {
			out[i] = w.redactAttr(ga, redactAll, depth+1)
		}
		return slog.Attr{Key: key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		x, _ := w.redactAny(v.Any(), depth)
		return slog.Attr{Key: key, Value: slog.AnyValue(x)}
	}
	return slog.Attr{Key: key, Value: v}
}
