// Package handoff holds the one value a transport that reads its own
// requests (streamable HTTP) hands package mcp per request, and through
// which mcp answers back what the transport needs of the answer. It is the
// whole per-request seam between the two: the message as the transport
// read it, the classifier's reading of its params, the hook that ends the
// request when the transport ends it first, the refusal the transport
// found the request must be answered with, and the answer's JSON-RPC
// error code (hence its HTTP status).
package handoff

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/keelmcp/keel/internal/jsonrpc"
	"github.com/keelmcp/keel/internal/revision"
	"github.com/keelmcp/keel/transport"
)

// Request is one request (or notification, or response) a transport read
// and hands to the server. The transport fills Msg, MaxDepth, Reading and
// Refusal before it hands the Request over, and never changes them
// afterwards; the rest is safe for concurrent use. The zero Request has no
// abort hook, no refusal and no error code.
type Request struct {
	// Msg is the message, decoded with at most MaxDepth levels of
	// nesting. Its bytes are the server's to keep: they never change.
	Msg jsonrpc.Message
	// Raw is the message's bytes as the transport's Read returned them (or
	// as handed to Server.ServeRequest). The server uses the Request only
	// for a message that holds these bytes (Of): a wrapper that returns
	// other bytes from Read (or a message of its own) has them read anew.
	Raw []byte
	// Reading is revision.Classify's reading of Msg.Params (the zero
	// Reading for a response).
	Reading revision.Reading
	// Refusal, when not nil, is the error the transport's own checks
	// refuse the request with (a request: it has a method and an id): the
	// server answers the request with it, through its middleware chain as
	// every answer, instead of running its method.
	Refusal *Refusal

	code atomic.Int64
	end  Ender
	mu   sync.Mutex
	// MaxDepth (a limit: 32 bits are plenty, and share a word with
	// aborted) is the depth Msg was decoded with.
	MaxDepth int32
	aborted  bool
}

// Refusal is a JSON-RPC error a transport refuses a well-formed request
// with before the server has served it (streamable HTTP: the checks of a
// 2026-07-28 POST's headers, _meta and revision).
type Refusal struct {
	Code    int64
	Message string
	// Data is the error's data, without the correlation id (the server
	// adds it, as to every protocol error); nil: none but that id.
	Data any
	// Status is the HTTP status of the answer while its error code is
	// Code (0: revision.ErrorStatus of Code): a refusal keeps the status
	// the transport gives it unless the answer is replaced by one of
	// another code.
	Status int
}

// Carrier is a transport that hands over the Request of the message its
// last Read returned (or of the one message it serves otherwise).
type Carrier interface {
	// Handoff returns that Request, or nil when there is none (a batch,
	// or a message the transport made itself).
	Handoff() *Request
}

// maxUnwrap bounds how many wrappers CarrierOf follows.
const maxUnwrap = 8

// CarrierOf returns the Carrier t is, or the one it wraps, followed
// through Unwrap() transport.Transport (see transport.Transport) across at
// most 8 wrappers; nil when there is none.
func CarrierOf(t transport.Transport) Carrier {
	for range maxUnwrap + 1 {
		if c, ok := t.(Carrier); ok {
			return c
		}
		u, ok := t.(interface{ Unwrap() transport.Transport })
		if !ok {
			return nil
		}
		if t = u.Unwrap(); t == nil {
			return nil
		}
	}
	return nil
}

// Of returns the Request c hands over for msg, the message just read:
// nil when c is nil, hands none, or handed it over for other bytes than
// msg holds (a wrapper changed the message, or made one of its own). A
// copy of the bytes is the same message.
func Of(c Carrier, msg []byte) *Request {
	if c == nil {
		return nil
	}
	x := c.Handoff()
	if x == nil || len(x.Raw) == 0 || len(x.Raw) != len(msg) {
		return nil
	}
	if &x.Raw[0] != &msg[0] && !bytes.Equal(x.Raw, msg) { // a copy is the same message
		return nil
	}
	return x
}

// Ender is what ends a request early (see OnAbort).
type Ender interface {
	// End ends the request.
	End()
}

// EndFunc is a function as an Ender.
type EndFunc func()

// End calls f.
func (f EndFunc) End() { f() }

// OnAbort registers end, which Abort calls once: the server registers
// what ends the request, for a transport that may end it before the
// request's context ends. end runs at once when the Request is aborted
// already. A later registration replaces an earlier one. (An Ender rather
// than a func: a method value would be allocated per request.)
func (x *Request) OnAbort(end Ender) {
	x.mu.Lock()
	if !x.aborted {
		x.end = end
		x.mu.Unlock()
		return
	}
	x.mu.Unlock()
	end.End()
}

// Abort ends the request: it calls the hook OnAbort registered, once, and
// makes a later OnAbort call its hook at once.
func (x *Request) Abort() {
	x.mu.Lock()
	end := x.end
	x.aborted, x.end = true, nil
	x.mu.Unlock()
	if end != nil {
		end.End()
	}
}

// SetErrorCode records the JSON-RPC error code of the answer the server is
// about to write (0: a result); the server calls it before it writes.
func (x *Request) SetErrorCode(code int64) { x.code.Store(code) }

// ErrorCode returns the code SetErrorCode recorded last (0: none, or a
// result).
func (x *Request) ErrorCode() int64 { return x.code.Load() }

// Status returns the HTTP status of the answer of a per-request
// revision's request (StatusOf ErrorCode).
func (x *Request) Status() int { return x.StatusOf(x.ErrorCode()) }

// StatusOf returns the HTTP status of an answer to the request whose
// JSON-RPC error code is code (0: a result): the Refusal's Status when
// code is the refusal's and it sets one, else revision.ErrorStatus(code).
func (x *Request) StatusOf(code int64) int {
	if f := x.Refusal; f != nil && f.Status != 0 && code == f.Code {
		return f.Status
	}
	return revision.ErrorStatus(code)
}
