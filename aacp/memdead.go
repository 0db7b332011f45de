package aacp

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Dead letters of the MemoryStore: a quarantined message keeps its record,
// with Status FAILED and DeadReason set, out of its pair's pending set.

// lockedMessage returns the record of id with its pair's and shard's locks
// held (release with the function returned), or nil.
func (s *MemoryStore) lockedMessage(id string) (*MessageRecord, *memPair, func()) {
	sh := s.msgShard(id)
	sh.mu.Lock()
	m := sh.m[id]
	sh.mu.Unlock()
	if m == nil {
		return nil, nil, nil
	}
	p := s.pair(m.Envelope.SourceAgentID, m.Envelope.TargetAgentID)
	p.mu.Lock()
	sh.mu.Lock()
	if sh.m[id] != m { // replaced or deleted meanwhile
		sh.mu.Unlock()
		p.mu.Unlock()
		return s.lockedMessage(id)
	}
	return m, p, func() { sh.mu.Unlock(); p.mu.Unlock() }
}

// Quarantine implements Store.
func (s *MemoryStore) Quarantine(_ context.Context, messageID, reason string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	m, p, unlock := s.lockedMessage(messageID)
	if m == nil {
		return false, notFound("message", messageID)
	}
	defer unlock()
	if m.Status != OutcomeUnknown {
		return false, nil
	}
	m.Status, m.DeadReason = OutcomeFailed, reason
	delete(p.pending, messageID)
	return true, nil
}

// ListDeadLetters implements Store.
func (s *MemoryStore) ListDeadLetters(_ context.Context, limit int) ([]*DeadLetter, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	var out []*DeadLetter
	for i := range s.msgs {
		sh := &s.msgs[i]
		sh.mu.Lock()
		for _, m := range sh.m {
			if m.DeadReason == "" {
				continue
			}
			out = append(out, deadLetterOf(m))
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b *DeadLetter) int {
		if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.MessageID, b.MessageID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// RetryDeadLetter implements Store.
func (s *MemoryStore) RetryDeadLetter(_ context.Context, messageID string, now time.Time) error {
	if err := s.check(); err != nil {
		return err
	}
	m, p, unlock := s.lockedMessage(messageID)
	if m == nil || m.DeadReason == "" {
		if unlock != nil {
			unlock()
		}
		return notFound("dead letter", messageID)
	}
	defer unlock()
	m.Status, m.DeadReason, m.RetryCount, m.NextRetryAt, m.ClaimedBy = OutcomeUnknown, "", 0, now, ""
	p.pending[messageID] = m
	return nil
}

// DropDeadLetter implements Store.
func (s *MemoryStore) DropDeadLetter(_ context.Context, messageID string) (*DeadLetter, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	m, _, unlock := s.lockedMessage(messageID)
	if m == nil || m.DeadReason == "" {
		if unlock != nil {
			unlock()
		}
		return nil, notFound("dead letter", messageID)
	}
	d := deadLetterOf(m)
	delete(s.msgShard(messageID).m, messageID)
	unlock()
	return d, nil
}

func deadLetterOf(m *MessageRecord) *DeadLetter {
	raw, _ := EncodeEnvelope(&m.Envelope)
	e := &m.Envelope
	return &DeadLetter{MessageID: m.MessageID, RequestID: m.RequestID, SourceAgentID: e.SourceAgentID,
		TargetAgentID: e.TargetAgentID, Seq: e.Seq, MessageType: e.MessageType, Raw: raw,
		Reason: m.DeadReason, Timestamp: m.Timestamp}
}
