package keel

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newJSONLogger returns a redacting logger writing JSON lines without time.
func newJSONLogger(buf *bytes.Buffer, opts *RedactOptions) *slog.Logger {
	h := slog.NewJSONHandler(buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(NewRedactingHandler(h, opts))
}

// lines decodes every JSON line written to buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func lastLine(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	ls := lines(t, buf)
	require.NotEmpty(t, ls)
	return ls[len(ls)-1]
}

func TestHandlerRedacts(t *testing.T) {
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want map[string]any
	}{
		{"top-level key, any case", func(l *slog.Logger) {
			l.Info("m", "PassWord", "p", "TOKEN", 1, "user", "u")
		}, map[string]any{"PassWord": RedactedValue, "TOKEN": RedactedValue, "user": "u"}},
		{"group attr", func(l *slog.Logger) {
			l.Info("m", slog.Group("req", "authorization", "Bearer x", slog.Group("inner", "api_key", "k", "n", 1)))
		}, map[string]any{"req": map[string]any{"authorization": RedactedValue, "inner": map[string]any{"api_key": RedactedValue, "n": 1.0}}}},
		{"group key hides the group", func(l *slog.Logger) {
			l.Info("m", slog.Group("credentials", "user", "u", "pw", "p"))
		}, map[string]any{"credentials": RedactedValue}},
		{"map value", func(l *slog.Logger) {
			l.Info("m", "args", map[string]any{"Cookie": "c", "list": []any{map[string]any{"secret": 1}}})
		}, map[string]any{"args": map[string]any{"Cookie": RedactedValue, "list": []any{map[string]any{"secret": RedactedValue}}}}},
		{"struct value", func(l *slog.Logger) {
			l.Info("m", "creds", &redactInner{Token: "t", Note: "n"})
		}, map[string]any{"creds": map[string]any{"token": RedactedValue, "note": "n"}}},
		{"LogValuer attr", func(l *slog.Logger) {
			l.Info("m", "v", valuer{token: "t"})
		}, map[string]any{"v": map[string]any{"token": RedactedValue, "kind": "valuer"}}},
		{"LogValuer under a redacted key", func(l *slog.Logger) {
			l.Info("m", "secret", valuer{token: "t"})
		}, map[string]any{"secret": RedactedValue}},
		{"WithAttrs", func(l *slog.Logger) {
			l.With("session_id", "s", "c", map[string]string{"set-cookie": "x"}).Info("m", "k", "v")
		}, map[string]any{"session_id": RedactedValue, "c": map[string]any{"set-cookie": RedactedValue}, "k": "v"}},
		{"WithGroup keys inside", func(l *slog.Logger) {
			l.WithGroup("req").With("token", "t").Info("m", "password", "p", "ok", true)
		}, map[string]any{"req": map[string]any{"token": RedactedValue, "password": RedactedValue, "ok": true}}},
		{"WithGroup named by a key", func(l *slog.Logger) {
			l.WithGroup("Credentials").With("user", "u").Info("m", "pin", 1234, slog.Group("g", "x", 1))
		}, map[string]any{"Credentials": map[string]any{"user": RedactedValue, "pin": RedactedValue, "g": RedactedValue}}},
		{"nested WithGroup inside a redacted group", func(l *slog.Logger) {
			l.WithGroup("secret").WithGroup("deeper").Info("m", "x", 1)
		}, map[string]any{"secret": map[string]any{"deeper": map[string]any{"x": RedactedValue}}}},
		{"empty-key group inside a redacted group is inlined", func(l *slog.Logger) {
			l.WithGroup("secret").Info("m", slog.Group("", "x", 1))
		}, map[string]any{"secret": map[string]any{"x": RedactedValue}}},
		{"custom keys", func(l *slog.Logger) {
			l.Info("m", "ssn", "123", "password", "p")
		}, map[string]any{"ssn": RedactedValue, "password": "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			var opts *RedactOptions
			if tt.name == "custom keys" {
				opts = &RedactOptions{Keys: []string{"SSN"}}
			}
			tt.log(newJSONLogger(&buf, opts))
			got := lastLine(t, &buf)
			delete(got, "level")
			delete(got, "msg")
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestHandlerSanitizes(t *testing.T) {
	var buf bytes.Buffer
	l := newJSONLogger(&buf, nil)
	l.WithGroup("g\tx").Info("two\nlines\r\x1b[2J",
		"k\x00", "v\n",
		"err", errors.New("failed:\nINFO forged line"),
		"m", map[string]any{"a\rb": []any{"c\u0085"}},
		"s", &redactInner{Note: "x\ty"},
		slog.Group("grp", "inner", "\x7f"),
	)
	raw := buf.String()
	assert.Equal(t, 1, strings.Count(raw, "\n"), "one line")
	got := lastLine(t, &buf)
	assert.Equal(t, `two\u000alines\u000d\u001b[2J`, got["msg"])
	g := got[`g\u0009x`].(map[string]any)
	assert.Equal(t, `v\u000a`, g[`k\u0000`])
	assert.Equal(t, `failed:\u000aINFO forged line`, g["err"])
	assert.Equal(t, map[string]any{`a\u000db`: []any{`c\u0085`}}, g["m"])
	assert.Equal(t, map[string]any{"token": RedactedValue, "note": `x\u0009y`}, g["s"])
	assert.Equal(t, map[string]any{"inner": `\u007f`}, g["grp"])
}

func TestHandlerTextOutput(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	slog.New(NewRedactingHandler(h, nil)).Info("hi\nthere", "password", "p", "note", "a\tb")
	assert.Equal(t, `level=INFO msg=hi\u000athere password=[REDACTED] note=a\u0009b`+"\n", buf.String())
}

// recordingHandler keeps what it is given.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
	attrs   [][]slog.Attr
	groups  []string
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attrs = append(h.attrs, as)
	return h
}
func (h *recordingHandler) WithGroup(name string) slog.Handler {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.groups = append(h.groups, name)
	return h
}

func recordAttrs(r slog.Record) []slog.Attr {
	var as []slog.Attr
	r.Attrs(func(a slog.Attr) bool { as = append(as, a); return true })
	return as
}

func TestHandlerPassesCleanRecordsThrough(t *testing.T) {
	rec := &recordingHandler{}
	h := NewRedactingHandler(rec, nil)
	assert.True(t, h.Enabled(context.Background(), slog.LevelInfo))
	assert.False(t, h.Enabled(context.Background(), slog.LevelDebug))

	m := map[string]any{"a": 1}
	r := slog.NewRecord(time.Time{}, slog.LevelInfo, "clean", 0)
	r.AddAttrs(slog.String("k", "v"), slog.Any("m", m))
	require.NoError(t, h.Handle(context.Background(), r))
	require.Len(t, rec.records, 1)
	got := recordAttrs(rec.records[0])
	assert.Equal(t, "clean", rec.records[0].Message)
	assert.Equal(t, recordAttrs(r), got)
	got[1].Value.Any().(map[string]any)["b"] = 2 // the very same map
	assert.Contains(t, m, "b")

	// WithAttrs hands clean attrs on as they are; dirty ones in a copy.
	in := []slog.Attr{slog.String("a", "b")}
	h.WithAttrs(in)
	assert.Same(t, &in[0], &rec.attrs[0][0])
	in = []slog.Attr{slog.String("token", "t"), slog.String("a", "b")}
	h.WithAttrs(in)
	assert.Equal(t, []slog.Attr{slog.String("token", RedactedValue), slog.String("a", "b")}, rec.attrs[1])
	assert.Equal(t, "t", in[0].Value.String(), "caller's slice untouched")

	assert.Same(t, h, h.WithGroup(""))
	assert.Same(t, h, h.WithAttrs(nil))
	h.WithGroup("a\nb")
	assert.Equal(t, []string{`a\u000ab`}, rec.groups)
}

func TestHandlerScalarAttrsDoNotAllocate(t *testing.T) {
	h := NewRedactingHandler(&discardHandler{}, nil)
	ctx := context.Background()
	now := time.Now()
	clean := slog.NewRecord(now, slog.LevelInfo, "tool call done", 0)
	clean.AddAttrs(slog.String("tool", "echo"), slog.String("correlationId", "c"), slog.Int("n", 3),
		slog.Bool("ok", true), slog.Time("at", now), slog.Duration("took", time.Millisecond),
		slog.Any("err", context.Canceled), slog.Any("args", map[string]any{"message": "hi"}))
	redacted := slog.NewRecord(now, slog.LevelInfo, "login", 0)
	redacted.AddAttrs(slog.String("Password", "p"), slog.Int("n", 3))
	for name, r := range map[string]slog.Record{"clean": clean, "redacted": redacted} {
		allocs := testing.AllocsPerRun(100, func() { _ = h.Handle(ctx, r) })
		assert.Zero(t, allocs, name)
	}
}

type discardHandler struct{}

func (*discardHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (*discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (h *discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h *discardHandler) WithGroup(string) slog.Handler           { return h }

func TestHandlerConcurrentUse(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	h := slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, nil)
	l := slog.New(NewRedactingHandler(h, nil)).With("token", "t")
	shared := map[string]any{"password": "p", "list": []any{map[string]any{"secret": "s"}}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				l.Info("m", "i", i, "shared", shared)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 160, strings.Count(buf.String(), "\n"))
	assert.NotContains(t, buf.String(), `"p"`)
	assert.NotContains(t, buf.String(), `"s"`)
	assert.Equal(t, "p", shared["password"])
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func TestNewRedactingHandlerNilNextPanics(t *testing.T) {
	assert.PanicsWithValue(t, "keel: NewRedactingHandler: nil next handler", func() { NewRedactingHandler(nil, nil) })
}

func BenchmarkRedactingHandler(b *testing.B) {
	ctx := context.Background()
	now := time.Now()
	cases := map[string][]slog.Attr{
		"scalars": {slog.String("tool", "echo"), slog.String("correlationId", "c"), slog.Int("n", 3)},
		"map":     {slog.Any("args", map[string]any{"message": "hi", "token": "t", "n": []any{1, 2}})},
		"struct":  {slog.Any("creds", &redactInner{Token: "t", Note: "n"})},
	}
	for name, attrs := range cases {
		b.Run(name, func(b *testing.B) {
			h := NewRedactingHandler(&discardHandler{}, nil)
			r := slog.NewRecord(now, slog.LevelInfo, "m", 0)
			r.AddAttrs(attrs...)
			b.ReportAllocs()
			for b.Loop() {
				_ = h.Handle(ctx, r)
			}
		})
	}
}
