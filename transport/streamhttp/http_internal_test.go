package streamhttp

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/transport"
)

func TestIsJSONContentType(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                 true,
		"application/json; charset=utf-8":  true,
		"Application/JSON":                 true,
		"application/json ; charset=UTF-8": true,
		"application/json; charset":        false, // a malformed parameter
		"application/jsonx":                false,
		"text/plain":                       false,
		"":                                 false,
	} {
		assert.Equal(t, want, isJSONContentType(ct), ct)
	}
}

// A session served in its POST ends its request through its hand-off
// (handoff.Request.OnAbort) when it closes: once, and at once for a registration that comes
// after the close. Its Handoff is the POST's message's.
func TestSessionAbortsItsHandoff(t *testing.T) {
	h := NewHandler(&Options{
		Serve:              func(ctx context.Context, _ transport.Transport) error { <-ctx.Done(); return nil },
		ServeRequest:       func(context.Context, transport.Transport, []byte) error { return nil },
		serveRequestAborts: true,
	})
	env, derr := parseIncoming([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), 8, nil)
	require.Nil(t, derr)
	s := h.newHTTPSession(context.Background(), env.handoff(), 0)
	s.cur = inbound{env: env}
	require.Same(t, &env.x, s.Handoff())
	assert.Equal(t, "ping", s.Handoff().Msg.Method)
	assert.Equal(t, int32(8), s.Handoff().MaxDepth)
	assert.Nil(t, s.cancel, "the POST's context is the session's")
	ended := 0
	s.Handoff().OnAbort(handoff.EndFunc(func() { ended++ }))
	s.close()
	s.close()
	assert.Equal(t, 1, ended)
	s.Handoff().OnAbort(handoff.EndFunc(func() { ended++ }))
	assert.Equal(t, 2, ended, "registered after the close: ended at once")

	// A ServeRequest that does not register keeps a context of its own.
	h.opts.serveRequestAborts = false
	s = h.newHTTPSession(context.Background(), env.handoff(), 0)
	require.NotNil(t, s.cancel)
	s.close()
	assert.Error(t, s.ctx.Err())
}

// The pending set holds its first id without a map and the others in
// one, and answers the same whichever holds an id.
func TestPendingSet(t *testing.T) {
	a, b := new(stream), new(stream)
	var p pendingSet
	assert.Nil(t, p.get("1"))
	assert.Equal(t, 0, p.len())
	p.put("1", a)
	assert.Nil(t, p.more, "the first id needs no map")
	p.put("2", a)
	p.put("3", b)
	assert.Equal(t, 3, p.len())
	assert.Same(t, a, p.get("1"))
	assert.Same(t, a, p.get("2"))
	assert.Same(t, b, p.get("3"))
	assert.Nil(t, p.get("4"))

	assert.Equal(t, 2, p.removeStream(a), "the first id and one in the map")
	assert.Nil(t, p.get("1"))
	assert.Nil(t, p.get("2"))
	assert.Equal(t, 1, p.len())

	p.put("1", a) // the first slot is free again
	assert.Same(t, a, p.get("1"))
	p.remove("3")
	p.remove("9") // unknown: nothing happens
	assert.Equal(t, 1, p.len())
	p.remove("1")
	assert.Equal(t, 0, p.len())

	p.put("5", a)
	p.put("6", b)
	p.clear()
	assert.Equal(t, 0, p.len())
	assert.Nil(t, p.get("5"))
	assert.Nil(t, p.get("6"))
}

// Accept admits a media type by name, by its type's range or by */*,
// in any of its values and elements; every type asked for must be admitted.
func TestAccepts(t *testing.T) {
	both := []string{"application/json", "text/event-stream"}
	for _, tc := range []struct {
		accept []string
		want   []string
		ok     bool
	}{
		{[]string{"application/json, text/event-stream"}, both, true},
		{[]string{"application/json", "text/event-stream"}, both, true},
		{[]string{"Text/Event-Stream;q=0.5 , APPLICATION/JSON"}, both, true},
		{[]string{"*/*"}, both, true},
		{[]string{"application/*, text/*"}, both, true},
		{[]string{"application/*"}, both, false},
		{[]string{"application/json"}, both, false},
		{[]string{"text/event-stream"}, both, false},
		{[]string{"applications/*, text/event-stream"}, both, false},
		{[]string{"text/*"}, []string{"text/event-stream"}, true},
		{[]string{"tex/*"}, []string{"text/event-stream"}, false},
		{[]string{"/*"}, []string{"text/event-stream"}, false},
		{nil, []string{"text/event-stream"}, false},
		{[]string{""}, both, false},
	} {
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		require.NoError(t, err)
		r.Header["Accept"] = tc.accept
		assert.Equal(t, tc.ok, accepts(r, tc.want...), "Accept %q, want %q", tc.accept, tc.want)
	}
}
