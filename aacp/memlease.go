package aacp

import (
	"context"
	"fmt"
	"time"
)

// checkFence reports whether f is the current token of its agent's lease.
// s.lmu must be held.
func (s *MemoryStore) checkFence(f Fence) error {
	l := s.leases[f.AgentID]
	if l == nil || l.Owner == "" || l.Token != f.Token {
		return fenceError(f)
	}
	return nil
}

func fenceError(f Fence) error {
	return fmt.Errorf("%w: agent %q token %d", ErrLeaseLost, f.AgentID, f.Token)
}

// UpdateRetry implements Store.
func (s *MemoryStore) UpdateRetry(_ context.Context, u *RetryUpdate) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	rs := s.reqShard(u.RequestID)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !u.Fence.IsZero() {
		s.lmu.RLock()
		defer s.lmu.RUnlock()
		if err := s.checkFence(u.Fence); err != nil {
			return false, err
		}
	}
	r := rs.m[u.RequestID]
	switch {
	case r == nil:
		return false, notFound("request", u.RequestID)
	case r.Status != OutcomeUnknown:
		return false, nil
	}
	r.Attempts = u.Attempts
	if u.Error != nil {
		r.Error = u.Error
	}
	return true, nil
}

// AcquireLease implements Store.
func (s *MemoryStore) AcquireLease(_ context.Context, agentID, owner string, now time.Time, ttl time.Duration) (*Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	l := s.leases[agentID]
	if l != nil && l.Owner != "" && l.ExpiresAt.After(now) {
		c := *l
		return &c, fmt.Errorf("%w: agent %q held by %q until %s", ErrLeaseHeld, agentID, l.Owner, l.ExpiresAt.Format(time.RFC3339Nano))
	}
	var token uint64 = 1
	if l != nil {
		token = l.Token + 1
	}
	l = &Lease{AgentID: agentID, Owner: owner, Token: token, ExpiresAt: now.Add(ttl)}
	s.leases[agentID] = l
	c := *l
	return &c, nil
}

// RenewLease implements Store.
func (s *MemoryStore) RenewLease(_ context.Context, l *Lease, now time.Time, ttl time.Duration) (*Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	cur := s.leases[l.AgentID]
	if cur == nil || cur.Owner == "" || cur.Owner != l.Owner || cur.Token != l.Token {
		return nil, fenceError(l.Fence())
	}
	cur.ExpiresAt = now.Add(ttl)
	c := *cur
	return &c, nil
}

// ReleaseLease implements Store.
func (s *MemoryStore) ReleaseLease(_ context.Context, l *Lease) error {
	if err := s.check(); err != nil {
		return err
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	cur := s.leases[l.AgentID]
	if cur == nil || cur.Owner == "" || cur.Owner != l.Owner || cur.Token != l.Token {
		return fenceError(l.Fence())
	}
	cur.Owner, cur.ExpiresAt = "", time.Time{}
	return nil
}

// GetLease implements Store.
func (s *MemoryStore) GetLease(_ context.Context, agentID string) (*Lease, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	s.lmu.RLock()
	defer s.lmu.RUnlock()
	l := s.leases[agentID]
	if l == nil {
		return nil, notFound("lease", agentID)
	}
	c := *l
	return &c, nil
}
