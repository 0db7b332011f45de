package handoff_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keelmcp/keel/internal/handoff"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// The abort hook runs once: when Abort comes after OnAbort, at Abort; when
// it comes before, at OnAbort; a later registration replaces an earlier
// one; Abort without a hook is harmless.
func TestAbort(t *testing.T) {
	var x handoff.Request
	x.Abort() // no hook yet
	n := 0
	x.OnAbort(handoff.EndFunc(func() { n++ }))
	assert.Equal(t, 1, n, "aborted already: ended at once")

	var y handoff.Request
	first, second := 0, 0
	y.OnAbort(handoff.EndFunc(func() { first++ }))
	y.OnAbort(handoff.EndFunc(func() { second++ }))
	y.Abort()
	y.Abort()
	assert.Equal(t, 0, first, "replaced")
	assert.Equal(t, 1, second, "once")
}

// Abort and OnAbort race: the hook still runs exactly once.
func TestAbortRace(t *testing.T) {
	for range 100 {
		var x handoff.Request
		var n atomic.Int32
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); x.OnAbort(handoff.EndFunc(func() { n.Add(1) })) }()
		go func() { defer wg.Done(); x.Abort() }()
		wg.Wait()
		assert.Equal(t, int32(1), n.Load())
	}
}

// The error code the server records gives the answer's HTTP status.
func TestErrorCode(t *testing.T) {
	var x handoff.Request
	assert.Zero(t, x.ErrorCode())
	assert.Equal(t, 200, x.Status())
	for code, status := range map[int64]int{-32601: 404, revision.CodeHeaderMismatch: 400, revision.CodeMissingClientCapability: 400,
		revision.CodeUnsupportedProtocolVersion: 400, -32602: 200, -32603: 200, 0: 200} {
		x.SetErrorCode(code)
		assert.Equal(t, code, x.ErrorCode())
		assert.Equal(t, status, x.Status(), code)
	}
}

// A refusal's own status holds while the answer keeps its code; an answer
// of another code (a middleware's replacement) takes that code's status.
func TestRefusalStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refusal handoff.Refusal
		code    int64
		status  int
	}{
		{name: "refusal answered with its status", refusal: handoff.Refusal{Code: -32602, Status: 400}, code: -32602, status: 400},
		{name: "refusal without a status of its own", refusal: handoff.Refusal{Code: revision.CodeHeaderMismatch}, code: revision.CodeHeaderMismatch, status: 400},
		{name: "replaced by a result", refusal: handoff.Refusal{Code: -32602, Status: 400}, code: 0, status: 200},
		{name: "replaced by another error", refusal: handoff.Refusal{Code: -32602, Status: 400}, code: -32601, status: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := handoff.Request{Refusal: &tc.refusal}
			x.SetErrorCode(tc.code)
			assert.Equal(t, tc.status, x.Status())
			assert.Equal(t, tc.status, x.StatusOf(tc.code))
		})
	}
}

// carrierT is a transport that hands over x for its message.
type carrierT struct {
	transport.Transport
	x *handoff.Request
}

func (c carrierT) Handoff() *handoff.Request { return c.x }

// wrapT wraps a transport, with Unwrap.
type wrapT struct{ transport.Transport }

func (w wrapT) Unwrap() transport.Transport { return w.Transport }

// selfT unwraps to itself.
type selfT struct{ transport.Transport }

func (s *selfT) Unwrap() transport.Transport { return s }

// nilT unwraps to nothing.
type nilT struct{ transport.Transport }

func (nilT) Unwrap() transport.Transport { return nil }

// CarrierOf finds the carrier through up to 8 wrappers with Unwrap, and
// stops at a wrapper without it, at a nil Unwrap and at a cycle; Of hands
// over the Request only for the very bytes it was made for.
func TestCarrierOfAndOf(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","method":"x"}`)
	x := &handoff.Request{Raw: msg}
	c := carrierT{x: x}
	wrapN := func(n int) transport.Transport {
		var tr transport.Transport = c
		for range n {
			tr = wrapT{tr}
		}
		return tr
	}
	for _, tc := range []struct {
		name string
		t    transport.Transport
		want bool
	}{
		{"the carrier", c, true},
		{"one wrapper", wrapN(1), true},
		{"eight wrappers", wrapN(8), true},
		{"nine wrappers", wrapN(9), false},
		{"a wrapper without Unwrap", struct{ transport.Transport }{c}, false},
		{"Unwrap returns nil", nilT{}, false},
		{"Unwrap returns itself", &selfT{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := handoff.CarrierOf(tc.t)
			assert.Equal(t, tc.want, got != nil)
			if tc.want {
				assert.Same(t, x, handoff.Of(got, msg), "the bytes it was made for")
				assert.Same(t, x, handoff.Of(got, append([]byte(nil), msg...)), "a copy of them (a wrapper that copies what it reads)")
				assert.Nil(t, handoff.Of(got, msg[:len(msg)-1]), "a part of them")
				other := append([]byte(nil), msg...)
				other[len(other)-3] = 'y'
				assert.Nil(t, handoff.Of(got, other), "other bytes (a wrapper that rewrites)")
				assert.Nil(t, handoff.Of(got, nil), "no message")
			}
		})
	}
	assert.Nil(t, handoff.Of(nil, msg))
	assert.Nil(t, handoff.Of(carrierT{}, msg), "a carrier that hands over nothing")
	assert.Nil(t, handoff.Of(carrierT{x: &handoff.Request{}}, nil), "a hand-off without bytes")
}
