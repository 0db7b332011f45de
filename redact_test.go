package keel

import (
	"encoding/json" // only for json.RawMessage, a type users log
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "hello, world", "hello, world"},
		{"newline", "a\nb", `a\u000ab`},
		{"crlf", "line\r\n", `line\u000d\u000a`},
		{"tab", "\tx", `\u0009x`},
		{"nul", "\x00", `\u0000`},
		{"unit separator", "\x1f", `\u001f`},
		{"escape sequence", "\x1b[31mred", `\u001b[31mred`},
		{"del", "\x7f", `\u007f`},
		{"c1 next line", "a\u0085b", `a\u0085b`},
		{"c1 csi", "\u009b2J", `\u009b2J`},
		{"non-ascii kept", "héllo ✓ \u00a0", "héllo ✓ \u00a0"},
		{"invalid utf-8 kept", "\xff\xfe", "\xff\xfe"},
		{"lone c2 at end", "a\xc2", "a\xc2"},
		{"literal escape kept", `\u000a`, `\u000a`},
		{"all kinds", "\n\x00\x7f\u0080ok", `\u000a\u0000\u007f\u0080ok`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Sanitize(tt.in))
			assert.Equal(t, tt.want != tt.in, needsSanitize(tt.in))
		})
	}
}

func TestSanitizeCleanDoesNotAllocate(t *testing.T) {
	s := strings.Repeat("clean text ", 10)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Sanitize(s) }))
}

func TestRedactKeyMatching(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		key      string
		redacted bool
	}{
		{"default lower", nil, "password", true},
		{"default upper", nil, "PASSWORD", true},
		{"default mixed", nil, "Authorization", true},
		{"default camel", nil, "apiKey", true},
		{"default snake upper", nil, "API_KEY", true},
		{"default dashed", nil, "Set-Cookie", true},
		{"default not substring", nil, "password_hint", false},
		{"default not prefix", nil, "pass", false},
		{"default ordinary", nil, "name", false},
		{"custom", []string{"SSN"}, "ssn", true},
		{"custom replaces defaults", []string{"ssn"}, "password", false},
		{"empty list redacts nothing", []string{}, "password", false},
		{"empty entry ignored", []string{""}, "", false},
		{"long key", []string{strings.Repeat("k", 80)}, strings.Repeat("K", 80), true},
		{"non-ascii key", []string{"Pässwort"}, "PÄSSWORT", true},
		{"non-ascii key other", []string{"Pässwort"}, "passwort", false},
		{"kelvin sign folds to k", []string{"key"}, "\u212aey", true},
		{"ascii input non-ascii entry", []string{"\u212aey"}, "KEY", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(map[string]any{tt.key: "v"}, tt.keys)
			want := "v"
			if tt.redacted {
				want = RedactedValue
			}
			assert.Equal(t, map[string]any{tt.key: want}, toAnyMap(t, got))
		})
	}
}

// toAnyMap accepts the original map[string]any or a rebuilt one.
func toAnyMap(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "got %T", v)
	return m
}

type redactInner struct {
	Token string `json:"token"`
	Note  string `json:"note"`
}

type redactBase struct {
	ID     int    `json:"id"`
	Secret string // no tag: Go name, matched case-insensitively
}

type redactOuter struct {
	redactBase                        // embedded: fields promoted
	Name       string                 `json:"name"`
	Password   string                 `json:"pw"` // the tag name is matched, not the Go name
	Hidden     string                 `json:"-"`
	Empty      string                 `json:"empty,omitempty"`
	Inner      *redactInner           `json:"inner"`
	NilInner   *redactInner           `json:"nilInner"`
	List       []redactInner          `json:"list"`
	Any        any                    `json:"any"`
	Map        map[string]redactInner `json:"map"`
	private    string
}

type stringKey string

type textKey struct{ a, b string }

func (k textKey) MarshalText() ([]byte, error) { return []byte(k.a + "_" + k.b), nil }

type valuer struct{ token string }

func (v valuer) LogValue() slog.Value {
	return slog.GroupValue(slog.String("token", v.token), slog.String("kind", "valuer"))
}

type stringValuer string

func (v stringValuer) LogValue() slog.Value { return slog.StringValue(string(v)) }

func TestRedactNested(t *testing.T) {
	tm := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"scalar", 42, 42},
		{"string", "password", "password"},
		{"time", tm, tm},
		{"nested maps", map[string]any{"a": map[string]any{"b": map[string]any{"Secret": 1, "c": 2}}},
			map[string]any{"a": map[string]any{"b": map[string]any{"Secret": RedactedValue, "c": 2}}}},
		{"key hides whole subtree", map[string]any{"credentials": map[string]any{"user": "u", "x": []any{1}}},
			map[string]any{"credentials": RedactedValue}},
		{"slice of maps", []any{map[string]any{"token": "t"}, "x", 3},
			[]any{map[string]any{"token": RedactedValue}, "x", 3}},
		{"typed slice", []map[string]string{{"cookie": "c", "k": "v"}},
			[]any{map[string]any{"cookie": RedactedValue, "k": "v"}}},
		{"array", [2]map[string]int{{"apikey": 1}, {"n": 2}},
			[]any{map[string]any{"apikey": RedactedValue}, map[string]int{"n": 2}}},
		{"map[string]string", map[string]string{"Authorization": "Bearer x", "a": "b"},
			map[string]any{"Authorization": RedactedValue, "a": "b"}},
		{"named string keys", map[stringKey]int{"PASSWORD": 1, "b": 2},
			map[string]any{"PASSWORD": RedactedValue, "b": 2}},
		{"int keys", map[int]map[string]any{7: {"secret": "s"}},
			map[string]any{"7": map[string]any{"secret": RedactedValue}}},
		{"text marshaler keys", map[textKey]any{{"api", "key"}: "k", {"a", "b"}: map[string]any{"token": 1}},
			map[string]any{"api_key": RedactedValue, "a_b": map[string]any{"token": RedactedValue}}},
		{"struct", redactOuter{
			redactBase: redactBase{ID: 1, Secret: "s"},
			Name:       "n", Password: "p", Hidden: "h", private: "x",
			Inner: &redactInner{Token: "t", Note: "n"},
			List:  []redactInner{{Token: "a", Note: "b"}},
			Any:   map[string]any{"refresh_token": "r"},
			Map:   map[string]redactInner{"k": {Token: "t"}},
		}, map[string]any{
			"id": 1, "Secret": RedactedValue, "name": "n", "pw": "p",
			"inner":    map[string]any{"token": RedactedValue, "note": "n"},
			"nilInner": (*redactInner)(nil),
			"list":     []any{map[string]any{"token": RedactedValue, "note": "b"}},
			"any":      map[string]any{"refresh_token": RedactedValue},
			"map":      map[string]any{"k": map[string]any{"token": RedactedValue, "note": ""}},
		}},
		{"pointer to struct", &redactInner{Token: "t", Note: "n"},
			map[string]any{"token": RedactedValue, "note": "n"}},
		{"LogValuer in a map", map[string]any{"v": valuer{token: "t"}},
			map[string]any{"v": map[string]any{"token": RedactedValue, "kind": "valuer"}}},
		{"LogValuer at top", valuer{token: "t"},
			map[string]any{"token": RedactedValue, "kind": "valuer"}},
		{"string LogValuer", stringValuer("x"), "x"},
		{"slog.Value in a map", map[string]any{"v": slog.GroupValue(slog.Int("password", 1))},
			map[string]any{"v": map[string]any{"password": RedactedValue}}},
		{"jsontext.Value", jsontext.Value(`{"a":[{"Password":"p","n":12345678901234567890}],"b":"x"}`),
			jsontext.Value(`{"a":[{"Password":"[REDACTED]","n":12345678901234567890}],"b":"x"}`)},
		{"json.RawMessage", json.RawMessage(`{"api_key":{"nested":true},"ok":1}`),
			json.RawMessage(`{"api_key":"[REDACTED]","ok":1}`)},
		{"raw JSON without secrets kept", jsontext.Value(`{"a": 1}`), jsontext.Value(`{"a": 1}`)},
		{"raw JSON string values are not keys", jsontext.Value(`["password"]`), jsontext.Value(`["password"]`)},
		{"invalid raw JSON hidden", jsontext.Value(`{"password":`), invalidJSONValue},
		{"bytes are leaves", map[string]any{"b": []byte("password")}, map[string]any{"b": []byte("password")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Redact(tt.in, nil))
		})
	}
}

func TestRedactEmbeddedConflicts(t *testing.T) {
	type A struct {
		Name  string
		Token string `json:"token"`
	}
	type B struct {
		Name string
	}
	type C struct {
		A
		B
		Token string `json:"token"` // shallower: hides A.Token
		Note  string `json:"note"`
	}
	got := Redact(C{A: A{Name: "a", Token: "inner"}, B: B{Name: "b"}, Token: "outer", Note: "x"}, nil)
	// Name is ambiguous at equal depth: dropped, as encoding/json does.
	assert.Equal(t, map[string]any{"token": RedactedValue, "note": "x"}, got)
}

func TestRedactUnchangedIsShared(t *testing.T) {
	m := map[string]any{"a": 1, "b": []any{"x", map[string]any{"c": true}}}
	got := Redact(m, nil)
	got.(map[string]any)["new"] = 1 // same map: nothing was copied
	assert.Contains(t, m, "new")

	s := redactInner{Note: "n"}
	assert.Equal(t, s, Redact(s, []string{"other"}))

	// Only the changed branch is rebuilt; the untouched one is shared.
	untouched := map[string]any{"x": 1}
	out := Redact(map[string]any{"keep": untouched, "token": "t"}, nil).(map[string]any)
	out["keep"].(map[string]any)["y"] = 2
	assert.Contains(t, untouched, "y")
}

func newMutationFixture() map[string]any {
	return map[string]any{
		"password": "p",
		"user":     map[string]any{"name": "n", "token": "t", "tags": []any{"a\nb", map[string]any{"Cookie": "c"}}},
		"creds":    &redactInner{Token: "t", Note: "line\r\n"},
		"list":     []redactInner{{Token: "a"}},
		"strs":     map[string]string{"secret": "s"},
		"raw":      jsontext.Value(`{"token":"t"}`),
		"arr":      [1]map[string]any{{"apikey": "k"}},
	}
}

func TestRedactDoesNotMutate(t *testing.T) {
	in := newMutationFixture()
	want := newMutationFixture() // a deep copy, built independently
	out := Redact(in, nil)
	require.Equal(t, want, in, "input mutated")
	assert.NotEqual(t, in, out)

	// The handler path (redaction + sanitization) leaves it alone too.
	var buf strings.Builder
	l := slog.New(NewRedactingHandler(slog.NewJSONHandler(&buf, nil), nil))
	l.Info("m", "v", in, slog.Group("g", "x", in))
	l.With("w", in).WithGroup("secret").Info("m", "v", in)
	require.Equal(t, want, in, "input mutated by the handler")
	assert.NotContains(t, buf.String(), `"t"`)
}

func TestRedactCyclesAndDepth(t *testing.T) {
	type node struct {
		Name string `json:"name"`
		Next *node  `json:"next"`
	}
	n := &node{Name: "a"}
	n.Next = n
	assert.Equal(t, map[string]any{"name": "a", "next": cycleValue}, Redact(n, nil))

	m := map[string]any{"a": 1}
	m["self"] = m
	assert.Equal(t, map[string]any{"a": 1, "self": cycleValue}, Redact(m, nil))

	s := []any{1, nil}
	s[1] = s
	assert.Equal(t, []any{1, cycleValue}, Redact(s, nil))

	// Two edges back to the same node: still linear, not exponential.
	type fork struct {
		L, R *fork
	}
	f := &fork{}
	f.L, f.R = f, f
	assert.Equal(t, map[string]any{"L": cycleValue, "R": cycleValue}, Redact(f, nil))

	// A shared (acyclic) value seen twice is not a cycle.
	shared := map[string]any{"token": "t"}
	assert.Equal(t,
		map[string]any{"a": map[string]any{"token": RedactedValue}, "b": map[string]any{"token": RedactedValue}},
		Redact(map[string]any{"a": shared, "b": shared}, nil))

	deep := any("leaf")
	for range maxRedactDepth + 5 {
		deep = map[string]any{"d": deep}
	}
	got := Redact(deep, nil)
	for range maxRedactDepth {
		got = got.(map[string]any)["d"]
	}
	assert.Equal(t, truncatedValue, got)
}

type panicErr struct{}

func (*panicErr) Error() string { panic("boom") }

func TestRedactErrors(t *testing.T) {
	w := walker{keys: defaultKeySet, sanitize: true}
	got, changed := w.redactAny(map[string]any{"err": errors.New("a\nb"), "ok": errors.New("fine")}, 0)
	require.True(t, changed)
	m := got.(map[string]any)
	assert.Equal(t, `a\u000ab`, m["err"])
	assert.Equal(t, errors.New("fine"), m["ok"])

	// An Error method that panics does not crash the walker.
	assert.NotPanics(t, func() { w.redactAny(map[string]any{"e": &panicErr{}}, 0) })
	assert.Equal(t, "!PANIC in Error: boom", errorText(reflect.ValueOf(&panicErr{})))

	var nilErr *panicErr
	got, changed = w.redactAny(map[string]any{"e": nilErr}, 0)
	assert.False(t, changed)
	assert.Equal(t, map[string]any{"e": nilErr}, got)
}

func TestDefaultRedactKeysIsACopy(t *testing.T) {
	k := DefaultRedactKeys()
	require.Contains(t, k, "password")
	k[0] = "changed"
	assert.Equal(t, "password", DefaultRedactKeys()[0])
	for _, key := range DefaultRedactKeys() {
		assert.Equal(t, strings.ToLower(key), key, "default keys are lower case")
	}
}

type embeddedPtr struct {
	APIKey string `json:"apiKey"`
}

type structDetails struct {
	*embeddedPtr
	When    time.Time         `json:"when"`
	Omit    string            `json:"omit,omitempty"`
	OmitPtr *redactInner      `json:"omitPtr,omitempty"`
	Secret  string            `json:"secret,omitempty"`
	Labels  map[string]string `json:"labels"`
	Fn      func()            `json:"-"`
}

func TestRedactStructDetails(t *testing.T) {
	tm := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		in   structDetails
		want any
	}{
		{"nil embedded pointer skipped, omitempty honoured", structDetails{When: tm, Secret: "s"},
			map[string]any{"when": tm, "secret": RedactedValue, "labels": map[string]string(nil)}},
		{"embedded pointer promoted", structDetails{embeddedPtr: &embeddedPtr{APIKey: "k"}, When: tm, Omit: "o"},
			map[string]any{"apiKey": RedactedValue, "when": tm, "omit": "o", "labels": map[string]string(nil)}},
		{"nothing to redact: the struct itself", structDetails{When: tm, Labels: map[string]string{"a": "b"}},
			structDetails{When: tm, Labels: map[string]string{"a": "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Redact(tt.in, nil))
		})
	}
}

func TestWalkerSanitizesEveryStringShape(t *testing.T) {
	w := walker{keys: defaultKeySet, sanitize: true}
	type named string
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"[]string", []string{"a\nb", "c"}, []any{`a\u000ab`, "c"}},
		{"map[string]string value", map[string]string{"k": "v\r"}, map[string]any{"k": `v\u000d`}},
		{"map[string]string key", map[string]string{"k\n": "v"}, map[string]any{`k\u000a`: "v"}},
		{"named string", named("x\ty"), `x\u0009y`},
		{"pointer to string", func() *string { s := "p\x00"; return &s }(), `p\u0000`},
		{"slog group value with inlined group", slog.GroupValue(slog.Group("", slog.String("token", "t")), slog.Any("a", []any{"\x1b"})),
			map[string]any{"token": RedactedValue, "a": []any{`\u001b`}}},
		{"slog int value", slog.IntValue(3), int64(3)},
		{"raw JSON string", jsontext.Value(`{"a":"x\ny"}`), jsontext.Value(`{"a":"x\\u000ay"}`)},
		{"clean is kept", map[string]any{"a": []string{"b"}}, map[string]any{"a": []string{"b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := w.redactAny(tt.in, 0)
			assert.Equal(t, tt.want, got)
		})
	}
}
