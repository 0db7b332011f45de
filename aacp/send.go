package aacp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// SendOption adjusts one SendRequest, Submit or SendReliable.
type SendOption func(*sendOptions)

type sendOptions struct {
	requestID string
	ttl       time.Duration
	expiresAt time.Time
}

// WithRequestID makes the call idempotent under a requestId of the
// caller's (a UUID v4): when the ledger holds that request already, nothing
// is sent again: SendRequest returns its recorded result, or waits for it
// while it is pending. Callers that must survive their own restart save
// the id before sending and send again with it.
func WithRequestID(id string) SendOption { return func(o *sendOptions) { o.requestID = id } }

// WithTTL sets how long the records of this message are kept (default
// Options.DefaultTTL).
func WithTTL(d time.Duration) SendOption { return func(o *sendOptions) { o.ttl = d } }

// WithExpiresAt sets when the records of this message may be purged.
func WithExpiresAt(t time.Time) SendOption { return func(o *sendOptions) { o.expiresAt = t } }

// SendRequest sends a REQUEST from source to target and waits for its
// outcome: the result of a COMPLETED request, a *FailedError for a FAILED
// one, and an *UnknownOutcomeError when ctx ends first (the request goes
// on; Await tells its outcome later). An empty source means the node
// itself (Options.ID). For a target hosted by this node the handler runs at
// once, on this goroutine when the Endpoint is a Mux.
func (n *Node) SendRequest(ctx context.Context, source, target string, payload any, opts ...SendOption) (json.RawMessage, error) {
	c, res, _, err := n.enqueueNew(ctx, MessageRequest, source, target, payload, true, opts, true)
	if err != nil {
		return nil, err
	}
	if res == nil {
		if res, err = n.wait(ctx, c, true); err != nil {
			return nil, err
		}
	}
	if res.Outcome == OutcomeFailed {
		return nil, res.Err()
	}
	return res.Result, nil
}

// Submit records a REQUEST durably and returns its requestId without
// waiting; Await returns its outcome. The handler of a local target runs
// on a background goroutine.
func (n *Node) Submit(ctx context.Context, source, target string, payload any, opts ...SendOption) (string, error) {
	_, _, m, err := n.enqueueNew(ctx, MessageRequest, source, target, payload, false, opts, false)
	if err != nil {
		return "", err
	}
	return m.RequestID, nil
}

// SendReliable records an EVENT durably and returns its messageId. It is
// delivered until acknowledged and processed once: the node gives it a
// requestId, deduplicated like a request's, and records its outcome (see
// Status), but no RESPONSE is sent. The handler of a local target runs on a
// background goroutine. With WithRequestID of a request the ledger holds
// already, nothing is sent and the messageId returned is empty.
func (n *Node) SendReliable(ctx context.Context, source, target string, payload any, opts ...SendOption) (string, error) {
	_, _, m, err := n.enqueueNew(ctx, MessageEvent, source, target, payload, false, opts, false)
	if err != nil {
		return "", err
	}
	return m.MessageID, nil
}

// enqueueNew stores a new message (and its request) and hands it to a
// local target. With wait, a REQUEST gets a waiter registered first. A
// request id given by the caller that the ledger holds already is not sent
// again: its resolution (final) or a waiter (pending) is returned.
func (n *Node) enqueueNew(ctx context.Context, typ MessageType, source, target string, payload any, inline bool, opts []SendOption, wait bool) (*call, *Resolution, *MessageRecord, error) {
	if n.closed.Load() {
		return nil, nil, nil, ErrClosed
	}
	if source == "" {
		source = n.id
	}
	if msg := checkAgentID(source); msg != "" {
		return nil, nil, nil, fmt.Errorf("aacp: source agent id: %s", msg)
	}
	if msg := checkAgentID(target); msg != "" {
		return nil, nil, nil, fmt.Errorf("aacp: target agent id: %s", msg)
	}
	var so sendOptions
	for _, o := range opts {
		o(&so)
	}
	raw, err := encodeValue(payload)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("aacp: payload: %w", err)
	}
	if err := checkSize("payload", len(raw), MaxPayloadBytes); err != nil {
		return nil, nil, nil, err
	}
	reqID := so.requestID
	if reqID != "" {
		if !IsUUIDv4(reqID) {
			return nil, nil, nil, fmt.Errorf("aacp: request id %q is not a UUID v4", reqID)
		}
		// A cheap look first; the claim of the id is Enqueue's.
		c, res, m, err := n.joinRecorded(ctx, reqID, typ, wait)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return c, res, m, err
		}
	} else {
		reqID = newUUID()
	}

	local := n.owns(ctx, target)
	if !local {
		if err := n.checkTarget(ctx, target); err != nil {
			return nil, nil, nil, err
		}
	}
	now := n.clock.Now()
	expires := so.expiresAt
	if expires.IsZero() {
		ttl := so.ttl
		if ttl <= 0 {
			ttl = n.opts.DefaultTTL
		}
		expires = now.Add(ttl)
	}
	deadline, _ := ctx.Deadline()
	rec := &RequestRecord{
		RequestID: reqID, SourceAgentID: source, TargetAgentID: target, MessageType: typ, Payload: json.RawMessage(raw),
		Status: OutcomeUnknown, Deadline: deadline, Timestamp: now, ExpiresAt: expires,
	}
	msgID := newUUID()
	msg := &MessageRecord{
		MessageID: msgID, RequestID: reqID, Status: OutcomeUnknown, Timestamp: now, ExpiresAt: expires, NextRetryAt: now,
		Envelope: Envelope{MessageID: msgID, RequestID: reqID, SourceAgentID: source, TargetAgentID: target,
			MessageType: typ, Timestamp: now, Payload: json.RawMessage(raw)},
	}
	if local {
		msg.NextRetryAt = now.Add(n.opts.RetransmitTimeout)
	}
	var c *call
	if wait && typ == MessageRequest {
		c = n.addCall(reqID, source)
	}
	// The execution of a request to a local target under an id this node
	// made up begins before the id is claimed: no other path of this node
	// can run the request between the claim and the run (a delivery
	// meanwhile finds it being processed), and the claim itself is the
	// read of the ledger's state before the run (no record of the id: not
	// final), so the run needs no other read. A caller's id (WithRequestID)
	// may be sent by others at once: its run reads the ledger.
	var ex *execution
	if local && so.requestID == "" {
		if ex, _ = n.begin(&msg.Envelope, nil); ex != nil {
			ex.deadline, ex.expiresAt, ex.attempts = deadline, expires, 1
		}
	}
	fail := func() {
		if c != nil {
			n.removeCall(c)
		}
		if ex != nil {
			n.end(ex)
		}
	}
	fence, err := n.sendFence(ctx, source)
	if err != nil {
		fail()
		return nil, nil, nil, err
	}
	if _, err := n.withSeq(ctx, source, target, &msg.Envelope, seqOp{rec: rec, msg: msg, fence: fence}); err != nil {
		fail()
		switch {
		case errors.Is(err, ErrDuplicateRequest):
			// Sent meanwhile by another caller with the same id: that
			// one runs; this one joins it.
			return n.joinRecorded(ctx, reqID, typ, wait)
		case errors.Is(err, ErrLeaseLost):
			n.leaseLost(fence)
		}
		return nil, nil, nil, err
	}

	if local {
		n.transmit(ctx, &msg.Envelope, ex, inline)
	}
	return c, nil, msg, nil
}

// sendFence returns the fence that sending as source carries. Sending as
// an agent the Endpoint hosts is fenced by its lease: a node that does not
// hold it (lost, or a standby) cannot send as the agent (ErrLeaseLost).
// Other sources (callers that are not agents) carry the zero fence.
func (n *Node) sendFence(ctx context.Context, source string) (Fence, error) {
	if !n.ep.Hosts(source) {
		return Fence{}, nil
	}
	fence, held := n.fenceFor(source)
	if !held && n.owns(ctx, source) { // registered since the last lease round
		fence, held = n.fenceFor(source)
	}
	if !held {
		return Fence{}, fmt.Errorf("%w: this node does not hold the lease of agent %q it sends as", ErrLeaseLost, source)
	}
	return fence, nil
}

// joinRecorded returns what a send of a request id the ledger records
// already gets: its resolution when final, else a waiter (with wait, for
// a REQUEST) or nothing. A missing id is ErrNotFound.
func (n *Node) joinRecorded(ctx context.Context, reqID string, typ MessageType, wait bool) (*call, *Resolution, *MessageRecord, error) {
	rec, err := n.store.GetRequestRecord(ctx, reqID)
	if err != nil {
		return nil, nil, nil, err
	}
	m := &MessageRecord{RequestID: reqID}
	if rec.Status.Final() {
		return nil, rec.Resolution(), m, nil
	}
	if !wait || typ != MessageRequest {
		return nil, nil, m, nil
	}
	c := n.addCall(reqID, rec.SourceAgentID)
	if res := n.recheck(ctx, c); res != nil {
		return nil, res, m, nil
	}
	return c, nil, m, nil
}

// ErrUnknownAgent is matched by the error of a send to an agent that no
// Node has ever hosted on the ledger (none ever held its lease) and that
// this node does not host, unless Options.AllowUnknownTargets.
var ErrUnknownAgent = errors.New("aacp: unknown agent")

// checkTarget fails with ErrUnknownAgent when the ledger has never seen
// target hosted. Agents once seen are remembered (leases are never
// deleted); a ledger that cannot answer lets the send through.
func (n *Node) checkTarget(ctx context.Context, target string) error {
	if n.opts.AllowUnknownTargets || n.ep.Hosts(target) {
		return nil
	}
	if _, ok := n.known.Load(target); ok {
		return nil
	}
	_, err := n.store.GetLease(ctx, target)
	switch {
	case err == nil:
		n.known.Store(target, struct{}{})
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w %q: no Node has ever hosted it on this ledger", ErrUnknownAgent, target)
	default:
		n.log.Warn("aacp: cannot read agent lease; sending anyway", "agent", target, "err", err)
	}
	return nil
}

// seqOp is what withSeq stores: a new message (Enqueue), or a resolution
// with its RESPONSE (Resolve). A struct rather than a closure: it does not
// escape to the heap.
type seqOp struct {
	rec   *RequestRecord
	msg   *MessageRecord
	res   *Resolution
	fence Fence
}

func (o *seqOp) run(ctx context.Context, s Store) (bool, error) {
	if o.res != nil {
		return s.Resolve(ctx, o.res, o.msg, o.fence)
	}
	return true, s.Enqueue(ctx, o.rec, o.msg, o.fence)
}

// withSeq gives env the next seq of its pair (and the ack of the opposite
// direction) and runs op, which stores it, under the session's lock; the
// seq counts as used when op reports it applied. A seq conflict (another
// process used the seq) reloads the sequence and tries once more.
func (n *Node) withSeq(ctx context.Context, source, target string, env *Envelope, op seqOp) (bool, error) {
	s := n.session(source, target)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(ctx, n.store); err != nil {
		return false, err
	}
	for try := 0; ; try++ {
		env.Seq = s.last + 1
		env.Ack = n.ackFor(target, source)
		applied, err := op.run(ctx, n.store)
		if err == nil {
			if applied {
				s.last = env.Seq
			}
			return applied, nil
		}
		if !errors.Is(err, ErrSeqConflict) || try > 0 {
			return false, err
		}
		s.loaded = false
		if err := s.load(ctx, n.store); err != nil {
			return false, err
		}
	}
}

// deliverLocal is the default transmit: hand the message to this node's
// receiver.
func (n *Node) deliverLocal(ctx context.Context, env *Envelope, ex *execution, inline bool) {
	n.receive(ctx, env, ex, inline)
}

// Await waits for the outcome of a request recorded in the ledger (sent by
// this node or any other sharing the ledger, before or after a restart).
// It returns the resolution (COMPLETED or FAILED; see Resolution.Err), an
// *UnknownOutcomeError when ctx ends first, or an error matching
// ErrNotFound.
func (n *Node) Await(ctx context.Context, requestID string) (*Resolution, error) {
	rec, err := n.store.GetRequestRecord(ctx, requestID)
	if err != nil {
		return nil, err
	}
	if rec.Status.Final() {
		return rec.Resolution(), nil
	}
	c := n.addCall(requestID, rec.SourceAgentID)
	if res := n.recheck(ctx, c); res != nil {
		return res, nil
	}
	if !n.holds(rec.SourceAgentID) {
		n.wake() // claim the caller's responses from now on
	}
	return n.wait(ctx, c, false)
}

// recheck looks at the ledger after a waiter was registered (a resolution
// may have been recorded just before): if the request is final it
// unregisters c and returns the resolution.
func (n *Node) recheck(ctx context.Context, c *call) *Resolution {
	rec, err := n.store.GetRequestRecord(ctx, c.requestID)
	if err != nil || !rec.Status.Final() {
		return nil
	}
	if n.removeCall(c) {
		return rec.Resolution()
	}
	if res := <-c.ch; res.Outcome.Final() {
		return res
	}
	return rec.Resolution()
}

// Status returns the status of a message:
// for a REQUEST or EVENT the outcome of its request, for a RESPONSE the
// outcome it reports.
func (n *Node) Status(ctx context.Context, messageID string) (*MessageStatus, error) {
	m, err := n.store.GetMessageRecord(ctx, messageID)
	if err != nil {
		return nil, err
	}
	st := &MessageStatus{MessageID: m.MessageID, RequestID: m.RequestID, Outcome: m.Status,
		Timestamp: m.Timestamp, Delivered: m.Status == OutcomeCompleted}
	if m.RequestID == "" {
		return st, nil
	}
	rec, err := n.store.GetRequestRecord(ctx, m.RequestID)
	switch {
	case err == nil:
		st.Outcome, st.Completion, st.Error, st.CompletionRef = rec.Status, rec.Completion, rec.Error, rec.CompletionRef
		if rec.Status.Final() {
			st.Timestamp = rec.CompletedAt
		}
	case errors.Is(err, ErrNotFound):
		st.Outcome = OutcomeUnknown
	default:
		return nil, err
	}
	return st, nil
}

// call is one caller waiting for the resolution of a request.
type call struct {
	requestID, source string
	ch                chan *Resolution // buffered; receives exactly one value
	next              *call            // other waiters of the same request
}

// callPool recycles calls (and their channels) once their waiter has its
// resolution and nobody else refers to them.
var callPool = sync.Pool{New: func() any { return &call{ch: make(chan *Resolution, 1)} }}

func (n *Node) addCall(requestID, source string) *call {
	c := callPool.Get().(*call)
	c.requestID, c.source, c.next = requestID, source, nil
	n.cmu.Lock()
	c.next = n.calls[requestID]
	n.calls[requestID] = c
	n.callers[source]++
	n.cmu.Unlock()
	return c
}

// removeCall unregisters c and reports whether it was still registered
// (if not, a resolution is on its way to c.ch).
func (n *Node) removeCall(c *call) bool {
	n.cmu.Lock()
	defer n.cmu.Unlock()
	var prev *call
	for x := n.calls[c.requestID]; x != nil; prev, x = x, x.next {
		if x != c {
			continue
		}
		switch {
		case prev != nil:
			prev.next = x.next
		case x.next != nil:
			n.calls[c.requestID] = x.next
		default:
			delete(n.calls, c.requestID)
		}
		n.dropCaller(c.source)
		return true
	}
	return false
}

func (n *Node) dropCaller(source string) {
	if n.callers[source]--; n.callers[source] <= 0 {
		delete(n.callers, source)
	}
}

// notify hands a durable resolution to every local waiter of its request.
func (n *Node) notify(res *Resolution) {
	n.cmu.Lock()
	c := n.calls[res.RequestID]
	if c != nil {
		delete(n.calls, res.RequestID)
		for x := c; x != nil; x = x.next {
			n.dropCaller(x.source)
		}
	}
	n.cmu.Unlock()
	for c != nil {
		next := c.next // read first: once it has its value, c may be reused
		c.ch <- res
		c = next
	}
}

// wait waits for c's resolution or the end of ctx. A caller that stops
// waiting gets UNKNOWN, unless the ledger shows a resolution by then. With
// disconnect, a cancelled (not timed out) caller counts as disconnected,
// which cancels a handler running in the background of this process.
func (n *Node) wait(ctx context.Context, c *call, disconnect bool) (*Resolution, error) {
	select {
	case res := <-c.ch:
		releaseCall(c)
		return checkKnown(res)
	case <-ctx.Done():
	}
	if !n.removeCall(c) {
		res := <-c.ch
		releaseCall(c)
		return checkKnown(res)
	}
	defer releaseCall(c)
	if disconnect && errors.Is(ctx.Err(), context.Canceled) {
		n.disconnect(c.requestID)
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if rec, err := n.store.GetRequestRecord(lctx, c.requestID); err == nil && rec.Status.Final() {
		return rec.Resolution(), nil
	}
	return nil, &UnknownOutcomeError{RequestID: c.requestID, Cause: ctx.Err()}
}

// releaseCall returns c to the pool: it is out of the waiter map and its
// channel is empty.
func releaseCall(c *call) {
	c.requestID, c.source, c.next = "", "", nil
	callPool.Put(c)
}

// checkKnown turns the UNKNOWN resolution waiters get when a resolution
// could not be recorded, or when the node closes, into an
// *UnknownOutcomeError.
func checkKnown(res *Resolution) (*Resolution, error) {
	if res.Outcome == OutcomeUnknown {
		var cause error = errors.New("the resolution could not be recorded")
		if res.Error != nil {
			cause = res.Error
		}
		return nil, &UnknownOutcomeError{RequestID: res.RequestID, Cause: cause}
	}
	return res, nil
}

// encodeValue returns v as JSON: a json.RawMessage or jsontext.Value as is (it must be valid
// and must not be modified afterwards), nil as null, anything else
// marshaled.
func encodeValue(v any) (jsontext.Value, error) {
	switch x := v.(type) {
	case nil:
		return jsontext.Value("null"), nil
	case json.RawMessage:
		if !jsontext.Value(x).IsValid() {
			return nil, errors.New("invalid JSON")
		}
		return jsontext.Value(x), nil
	case jsontext.Value:
		if !x.IsValid() {
			return nil, errors.New("invalid JSON")
		}
		return x, nil
	}
	b, err := jsonv2.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}
