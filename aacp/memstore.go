package aacp

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelmcp/keel/mcp"
)

// ErrStoreClosed is returned by a closed MemoryStore.
var ErrStoreClosed = errors.New("aacp: store is closed")

// MemoryStore is a Store in memory: structured records in maps, for tests
// and for processes that need AACP's ordering and deduplication but not
// its durability. It is best effort for one process lifetime only and is
// NOT durable across restarts.
//
// Records are spread over shards by id, each with its own lock, and each
// source→target pair has a lock of its own, so that concurrent senders
// rarely wait for each other. Locks are taken in the order pair, request
// shard, message shard. A message record's mutable fields (Status,
// RetryCount, NextRetryAt, ClaimedBy) change under both its pair's and its
// shard's lock; a request record's under its shard's lock.
type MemoryStore struct {
	closed atomic.Bool
	seed   maphash.Seed

	pairs    sync.Map   // pairKey → *memPair
	pmu      sync.Mutex // guards byTarget and the creation of pairs
	byTarget map[string][]*memPair

	reqs [memShards]reqShard
	msgs [memShards]msgShard

	// lmu guards leases. Fenced writes hold it for reading from their
	// fence check to the end of their update, so that an acquisition (which
	// holds it for writing) is ordered before or after them as a whole.
	// It is taken after every other lock.
	lmu    sync.RWMutex
	leases map[string]*Lease
}

const memShards = 32

type reqShard struct {
	mu     sync.Mutex
	m      map[string]*RequestRecord
	expiry expiryQueue
	_      [64]byte // keep shards' locks on separate cache lines
}

type msgShard struct {
	mu     sync.Mutex
	m      map[string]*MessageRecord
	expiry expiryQueue
	_      [64]byte
}

type pairKey struct{ source, target string }

// memPair is the state of one source→target pair.
type memPair struct {
	mu           sync.Mutex
	lastSeq, ack uint64
	pending      map[string]*MessageRecord // UNKNOWN messages by id
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	s := &MemoryStore{seed: maphash.MakeSeed(), byTarget: map[string][]*memPair{}, leases: map[string]*Lease{}}
	for i := range s.reqs {
		s.reqs[i].m = map[string]*RequestRecord{}
		s.msgs[i].m = map[string]*MessageRecord{}
	}
	return s
}

var _ Store = (*MemoryStore)(nil)

func (s *MemoryStore) reqShard(id string) *reqShard {
	return &s.reqs[maphash.String(s.seed, id)%memShards]
}

func (s *MemoryStore) msgShard(id string) *msgShard {
	return &s.msgs[maphash.String(s.seed, id)%memShards]
}

// pair returns the state of source→target, created if needed.
func (s *MemoryStore) pair(source, target string) *memPair {
	k := pairKey{source, target}
	if p, ok := s.pairs.Load(k); ok {
		return p.(*memPair)
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if p, ok := s.pairs.Load(k); ok {
		return p.(*memPair)
	}
	p := &memPair{pending: map[string]*MessageRecord{}}
	s.pairs.Store(k, p)
	s.byTarget[target] = append(s.byTarget[target], p)
	return p
}

// findPair returns the state of source→target, or nil.
func (s *MemoryStore) findPair(source, target string) *memPair {
	if p, ok := s.pairs.Load(pairKey{source, target}); ok {
		return p.(*memPair)
	}
	return nil
}

func (s *MemoryStore) check() error {
	if s.closed.Load() {
		return ErrStoreClosed
	}
	return nil
}

func notFound(kind, id string) error { return fmt.Errorf("%w: %s %s", ErrNotFound, kind, id) }

// PutRequestRecord implements Store.
func (s *MemoryStore) PutRequestRecord(_ context.Context, rec *RequestRecord) error {
	if err := s.check(); err != nil {
		return err
	}
	sh := s.reqShard(rec.RequestID)
	sh.mu.Lock()
	sh.put(rec)
	sh.mu.Unlock()
	return nil
}

func (sh *reqShard) put(rec *RequestRecord) {
	sh.m[rec.RequestID] = rec
	if !rec.ExpiresAt.IsZero() {
		sh.expiry.push(expiryEntry{at: rec.ExpiresAt.UnixNano(), id: rec.RequestID})
	}
}

func (sh *msgShard) put(rec *MessageRecord) {
	sh.m[rec.MessageID] = rec
	if !rec.ExpiresAt.IsZero() {
		sh.expiry.push(expiryEntry{at: rec.ExpiresAt.UnixNano(), id: rec.MessageID, message: true})
	}
}

// PutMessageRecord implements Store.
func (s *MemoryStore) PutMessageRecord(_ context.Context, rec *MessageRecord) error {
	if err := s.check(); err != nil {
		return err
	}
	sh := s.msgShard(rec.MessageID)
	s.removeMessage(sh, rec.MessageID, nil) // a record replaced leaves its pair's pending set
	p := s.pair(rec.Envelope.SourceAgentID, rec.Envelope.TargetAgentID)
	p.mu.Lock()
	sh.mu.Lock()
	sh.put(rec)
	if rec.Status == OutcomeUnknown {
		p.pending[rec.MessageID] = rec
	}
	sh.mu.Unlock()
	p.mu.Unlock()
	return nil
}

// removeMessage deletes the message id (only if it is still the record
// match, when match is not nil) and reports whether it did.
func (s *MemoryStore) removeMessage(sh *msgShard, id string, match func(*MessageRecord) bool) bool {
	sh.mu.Lock()
	old := sh.m[id]
	sh.mu.Unlock()
	if old == nil {
		return false
	}
	p := s.findPair(old.Envelope.SourceAgentID, old.Envelope.TargetAgentID)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[id] != old || (match != nil && !match(old)) {
		return false
	}
	delete(sh.m, id)
	delete(p.pending, id)
	return true
}

// GetRequestRecord implements Store.
func (s *MemoryStore) GetRequestRecord(_ context.Context, requestID string) (*RequestRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	sh := s.reqShard(requestID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec := sh.m[requestID]
	if rec == nil {
		return nil, notFound("request", requestID)
	}
	c := *rec
	return &c, nil
}

// GetMessageRecord implements Store.
func (s *MemoryStore) GetMessageRecord(_ context.Context, messageID string) (*MessageRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	sh := s.msgShard(messageID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec := sh.m[messageID]
	if rec == nil {
		return nil, notFound("message", messageID)
	}
	c := *rec
	return &c, nil
}

// MarkCompleted implements Store.
func (s *MemoryStore) MarkCompleted(ctx context.Context, requestID string, outcome Outcome, completionRef string) error {
	if !outcome.Final() {
		return fmt.Errorf("aacp: MarkCompleted with outcome %q", outcome)
	}
	_, err := s.Resolve(ctx, &Resolution{RequestID: requestID, Outcome: outcome, CompletionRef: completionRef, CompletedAt: time.Now()}, nil, Fence{})
	return err
}

// MarkFailed implements Store.
func (s *MemoryStore) MarkFailed(ctx context.Context, requestID string, serr *mcp.StructuredError) error {
	_, err := s.Resolve(ctx, &Resolution{RequestID: requestID, Outcome: OutcomeFailed, Error: serr, CompletedAt: time.Now()}, nil, Fence{})
	return err
}

// GetLastSequence implements Store.
func (s *MemoryStore) GetLastSequence(_ context.Context, source, target string) (uint64, error) {
	return s.pairCounter(source, target, func(p *memPair) uint64 { return p.lastSeq })
}

// UpdateLastSequence implements Store.
func (s *MemoryStore) UpdateLastSequence(_ context.Context, source, target string, seq uint64) error {
	if err := s.check(); err != nil {
		return err
	}
	p := s.pair(source, target)
	p.mu.Lock()
	p.lastSeq = max(p.lastSeq, seq)
	p.mu.Unlock()
	return nil
}

// GetAck implements Store.
func (s *MemoryStore) GetAck(_ context.Context, source, target string) (uint64, error) {
	return s.pairCounter(source, target, func(p *memPair) uint64 { return p.ack })
}

// pairCounter reads one counter of the source→target pair under its lock
// (0 for a pair never seen).
func (s *MemoryStore) pairCounter(source, target string, get func(*memPair) uint64) (uint64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	p := s.findPair(source, target)
	if p == nil {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return get(p), nil
}

// GetUnacknowledgedMessages implements Store.
func (s *MemoryStore) GetUnacknowledgedMessages(_ context.Context, source, target string) ([]*Envelope, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	p := s.findPair(source, target)
	if p == nil {
		return nil, nil
	}
	p.mu.Lock()
	out := make([]*Envelope, 0, len(p.pending))
	for _, m := range p.pending {
		env := m.Envelope // immutable once stored
		out = append(out, &env)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b *Envelope) int { return cmpUint(a.Seq, b.Seq) })
	return out, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ListPendingRequests implements Store.
func (s *MemoryStore) ListPendingRequests(_ context.Context, olderThan time.Time) ([]*RequestRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var out []*RequestRecord
	for i := range s.reqs {
		sh := &s.reqs[i]
		sh.mu.Lock()
		for _, r := range sh.m {
			if r.Status == OutcomeUnknown && (olderThan.IsZero() || r.Timestamp.Before(olderThan)) {
				c := *r
				out = append(out, &c)
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b *RequestRecord) int { return a.Timestamp.Compare(b.Timestamp) })
	return out, nil
}

// ListMessagesInState implements Store.
func (s *MemoryStore) ListMessagesInState(_ context.Context, outcome Outcome, olderThan time.Time) ([]*MessageRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var out []*MessageRecord
	for i := range s.msgs {
		sh := &s.msgs[i]
		sh.mu.Lock()
		for _, m := range sh.m {
			if m.Status == outcome && (olderThan.IsZero() || m.Timestamp.Before(olderThan)) {
				c := *m
				out = append(out, &c)
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b *MessageRecord) int {
		if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
			return c
		}
		return cmpUint(a.Envelope.Seq, b.Envelope.Seq)
	})
	return out, nil
}

// purgeBatch bounds the expiries PurgeExpired handles under one hold of a
// shard's lock.
const purgeBatch = 128

// PurgeExpired implements Store. It works shard by shard, in small batches,
// so that a large purge does not stall other callers.
func (s *MemoryStore) PurgeExpired(_ context.Context, now time.Time) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	limit := now.UnixNano()
	n := 0
	for i := range s.reqs {
		sh := &s.reqs[i]
		for more := true; more; {
			sh.mu.Lock()
			k := 0
			for ; k < purgeBatch; k++ {
				e, ok := sh.expiry.popDue(limit)
				if !ok {
					break
				}
				if r := sh.m[e.id]; r != nil && !r.ExpiresAt.IsZero() && r.ExpiresAt.UnixNano() == e.at {
					delete(sh.m, e.id)
					n++
				}
			}
			sh.mu.Unlock()
			more = k == purgeBatch
		}
	}
	// Messages no longer pending (acknowledged: nearly all) are deleted
	// under their shard's lock alone; pending ones leave their pair's
	// pending set too, under the pair's lock.
	var slow []expiryEntry
	for i := range s.msgs {
		sh := &s.msgs[i]
		for more := true; more; {
			slow = slow[:0]
			sh.mu.Lock()
			k := 0
			for ; k < purgeBatch; k++ {
				e, ok := sh.expiry.popDue(limit)
				if !ok {
					break
				}
				m := sh.m[e.id]
				switch {
				case m == nil || m.ExpiresAt.IsZero() || m.ExpiresAt.UnixNano() != e.at:
				case m.Status != OutcomeUnknown:
					delete(sh.m, e.id)
					n++
				default:
					slow = append(slow, e)
				}
			}
			sh.mu.Unlock()
			more = k == purgeBatch
			for _, e := range slow {
				at := e.at
				if s.removeMessage(sh, e.id, func(m *MessageRecord) bool {
					return !m.ExpiresAt.IsZero() && m.ExpiresAt.UnixNano() == at
				}) {
					n++
				}
			}
		}
	}
	return n, nil
}

// Enqueue implements Store. The request id is claimed under its shard's
// lock, held until the message is stored.
func (s *MemoryStore) Enqueue(_ context.Context, req *RequestRecord, msg *MessageRecord, fence Fence) error {
	if err := s.check(); err != nil {
		return err
	}
	p := s.pair(msg.Envelope.SourceAgentID, msg.Envelope.TargetAgentID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkSeq(&msg.Envelope); err != nil {
		return err
	}
	var rs *reqShard
	if req != nil {
		rs = s.reqShard(req.RequestID)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if _, ok := rs.m[req.RequestID]; ok {
			return fmt.Errorf("%w: %s", ErrDuplicateRequest, req.RequestID)
		}
	}
	if !fence.IsZero() {
		s.lmu.RLock()
		defer s.lmu.RUnlock()
		if err := s.checkFence(fence); err != nil {
			return err
		}
	}
	if rs != nil {
		rs.put(req)
	}
	s.enqueue(p, msg)
	return nil
}

// checkSeq reports whether env's seq is above the pair's last one (and
// so unused). p.mu must be held.
func (p *memPair) checkSeq(env *Envelope) error {
	if env.Seq <= p.lastSeq {
		return fmt.Errorf("%w: %s→%s seq %d (last %d)", ErrSeqConflict, env.SourceAgentID, env.TargetAgentID, env.Seq, p.lastSeq)
	}
	return nil
}

// enqueue stores msg. p.mu must be held.
func (s *MemoryStore) enqueue(p *memPair, msg *MessageRecord) {
	ms := s.msgShard(msg.MessageID)
	ms.mu.Lock()
	ms.put(msg)
	ms.mu.Unlock()
	if msg.Status == OutcomeUnknown {
		p.pending[msg.MessageID] = msg
	}
	p.lastSeq = max(p.lastSeq, msg.Envelope.Seq)
}

// Resolve implements Store.
func (s *MemoryStore) Resolve(_ context.Context, res *Resolution, response *MessageRecord, fence Fence) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	var p *memPair
	if response != nil {
		p = s.pair(response.Envelope.SourceAgentID, response.Envelope.TargetAgentID)
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	rs := s.reqShard(res.RequestID)
	rs.mu.Lock()
	if !fence.IsZero() {
		s.lmu.RLock()
		defer s.lmu.RUnlock() // after the updates below
		if err := s.checkFence(fence); err != nil {
			rs.mu.Unlock()
			return false, err
		}
	}
	r := rs.m[res.RequestID]
	switch {
	case r == nil:
		rs.mu.Unlock()
		return false, notFound("request", res.RequestID)
	case r.Status.Final():
		rs.mu.Unlock()
		return false, nil
	}
	if p != nil {
		if err := p.checkSeq(&response.Envelope); err != nil {
			rs.mu.Unlock()
			return false, err
		}
	}
	// Modified in place, under the shard's lock: records returned are
	// copies, and the Node that enqueued the record reads only the fields
	// it set itself.
	r.Status, r.Completion, r.Result, r.Error = res.Outcome, res.Completion, res.Result, res.Error
	r.CompletionRef, r.CompletedAt = res.CompletionRef, res.CompletedAt
	if res.Attempts > 0 {
		r.Attempts = res.Attempts
	}
	rs.mu.Unlock()
	if p != nil {
		s.enqueue(p, response)
	}
	return true, nil
}

// Acknowledge implements Store.
func (s *MemoryStore) Acknowledge(_ context.Context, acks []Ack) error {
	if err := s.check(); err != nil {
		return err
	}
	var stale []error
	for _, a := range acks {
		p := s.pair(a.Source, a.Target)
		p.mu.Lock()
		if !a.Fence.IsZero() {
			s.lmu.RLock()
			if err := s.checkFence(a.Fence); err != nil {
				s.lmu.RUnlock()
				p.mu.Unlock()
				stale = append(stale, err)
				continue
			}
		}
		s.ackPair(p, a)
		if !a.Fence.IsZero() {
			s.lmu.RUnlock()
		}
		p.mu.Unlock()
	}
	return errors.Join(stale...)
}

// ackPair records a on its pair. p.mu must be held.
func (s *MemoryStore) ackPair(p *memPair, a Ack) {
	p.ack = max(p.ack, a.Seq)
	for id, m := range p.pending {
		if m.Envelope.Seq <= p.ack {
			ms := s.msgShard(id)
			ms.mu.Lock()
			m.Status = OutcomeCompleted
			ms.mu.Unlock()
			delete(p.pending, id)
		}
	}
}

// ClaimDue implements Store.
func (s *MemoryStore) ClaimDue(_ context.Context, q ClaimQuery) ([]*MessageRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var pairs []*memPair
	s.lmu.RLock()
	targets := make([]string, 0, len(q.Targets))
	for _, t := range q.Targets {
		if f, ok := q.FenceOf(t); !ok || s.checkFence(f) == nil {
			targets = append(targets, t)
		}
	}
	s.lmu.RUnlock()
	s.pmu.Lock()
	for _, t := range targets {
		pairs = append(pairs, s.byTarget[t]...)
	}
	s.pmu.Unlock()

	// Find the due messages, then claim each one under its pair's lock if
	// nobody claimed it meanwhile.
	type candidate struct {
		p       *memPair
		m       *MessageRecord
		next    time.Time
		retries int
	}
	var due []candidate
	for _, p := range pairs {
		p.mu.Lock()
		for _, m := range p.pending {
			if q.IgnoreSchedule || !m.NextRetryAt.After(q.Now) {
				due = append(due, candidate{p, m, m.NextRetryAt, m.RetryCount})
			}
		}
		p.mu.Unlock()
	}
	slices.SortFunc(due, func(a, b candidate) int {
		if c := a.next.Compare(b.next); c != 0 {
			return c
		}
		return cmpUint(a.m.Envelope.Seq, b.m.Envelope.Seq)
	})
	limit := q.ClaimLimit()
	var out []*MessageRecord
	for _, c := range due {
		if len(out) == limit {
			break
		}
		c.p.mu.Lock()
		if c.p.pending[c.m.MessageID] == c.m && c.m.RetryCount == c.retries {
			ms := s.msgShard(c.m.MessageID)
			ms.mu.Lock()
			c.m.RetryCount++
			c.m.ClaimedBy = q.Owner
			c.m.NextRetryAt = q.NextRetry(c.m.RetryCount)
			cp := *c.m
			ms.mu.Unlock()
			out = append(out, &cp)
		}
		c.p.mu.Unlock()
	}
	return out, nil
}

// Close implements Store; later calls fail with ErrStoreClosed.
func (s *MemoryStore) Close() error {
	s.closed.Store(true)
	return nil
}

// Len returns the number of request and message records held (for tests
// and monitoring).
func (s *MemoryStore) Len() (requests, messages int) {
	for i := range s.reqs {
		s.reqs[i].mu.Lock()
		requests += len(s.reqs[i].m)
		s.reqs[i].mu.Unlock()
		s.msgs[i].mu.Lock()
		messages += len(s.msgs[i].m)
		s.msgs[i].mu.Unlock()
	}
	return requests, messages
}

// expiryEntry is one record's expiry; entries of records replaced or
// deleted since are skipped when popped.
type expiryEntry struct {
	at      int64
	id      string
	message bool
}

// expiryQueue orders expiries: a FIFO for the common case (records created
// in time order with one TTL expire in that order, O(1) each) and a heap for
// the others.
type expiryQueue struct {
	fifo []expiryEntry
	head int
	heap expiryHeap
}

func (q *expiryQueue) push(e expiryEntry) {
	if n := len(q.fifo); n == q.head || q.fifo[n-1].at <= e.at {
		q.fifo = append(q.fifo, e)
		return
	}
	q.heap.push(e)
}

// popDue removes and returns the earliest entry if it is due at limit.
func (q *expiryQueue) popDue(limit int64) (expiryEntry, bool) {
	fifoOK := q.head < len(q.fifo) && q.fifo[q.head].at <= limit
	heapOK := len(q.heap) > 0 && q.heap[0].at <= limit
	switch {
	case fifoOK && (!heapOK || q.fifo[q.head].at <= q.heap[0].at):
		e := q.fifo[q.head]
		q.fifo[q.head] = expiryEntry{}
		q.head++
		if q.head >= 1024 && q.head*2 >= len(q.fifo) {
			q.fifo = append(q.fifo[:0], q.fifo[q.head:]...)
			q.head = 0
		}
		return e, true
	case heapOK:
		return q.heap.pop(), true
	}
	return expiryEntry{}, false
}

// expiryHeap is a min-heap by expiry time (typed, so pushing allocates
// nothing beyond the slice's growth).
type expiryHeap []expiryEntry

func (h *expiryHeap) push(e expiryEntry) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].at <= a[i].at {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *expiryHeap) pop() expiryEntry {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = expiryEntry{}
	a = a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].at < a[m].at {
			m = l
		}
		if r < n && a[r].at < a[m].at {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
