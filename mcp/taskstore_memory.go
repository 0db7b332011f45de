package mcp

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemoryTaskStore is the TaskStore a Server uses unless TaskOptions.Store
// names another: the records of one process, in memory. Expired records
// are deleted when the store is next used.
type MemoryTaskStore struct {
	now func() time.Time

	mu         sync.Mutex
	byID       map[string]*memTask
	seq        uint64
	nextExpiry time.Time                 // earliest expiry among the records (zero: none)
	active     map[string]int            // quota → records not terminal
	finished   map[string]*finishedTasks // quota → terminal records, in the order they finished
}

// memTask is one record of a MemoryTaskStore.
type memTask struct {
	rec *TaskRecord
	fin *list.Element // terminal: its place in its quota's finished list
}

// finishedTasks are the terminal records of one quota key, in the order
// they finished, and the bytes they count.
type finishedTasks struct {
	l     list.List // of *memTask
	bytes int64
}

var _ TaskStore = (*MemoryTaskStore)(nil)

// NewMemoryTaskStore returns an empty store whose clock is now (nil =
// time.Now); the clock decides expiry.
func NewMemoryTaskStore(now func() time.Time) *MemoryTaskStore {
	if now == nil {
		now = time.Now
	}
	return &MemoryTaskStore{now: now, byID: map[string]*memTask{}, active: map[string]int{}, finished: map[string]*finishedTasks{}}
}

// Create implements TaskStore.
func (m *MemoryTaskStore) Create(_ context.Context, rec *TaskRecord, lim TaskLimits) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	if m.byID[rec.ID] != nil {
		return fmt.Errorf("%w: %q", ErrTaskExists, rec.ID)
	}
	if max := lim.MaxTasks; max > 0 && !rec.Terminal() && m.active[rec.Quota] >= max {
		return fmt.Errorf("%w (at most %d)", ErrTaskLimit, max)
	}
	m.seq++
	rec.Seq, rec.Version = m.seq, 1
	t := &memTask{rec: rec.Clone()}
	m.byID[rec.ID] = t
	if !rec.ExpiresAt.IsZero() && (m.nextExpiry.IsZero() || rec.ExpiresAt.Before(m.nextExpiry)) {
		m.nextExpiry = rec.ExpiresAt
	}
	if rec.Terminal() {
		m.retireLocked(t, lim)
	} else {
		m.active[rec.Quota]++
	}
	return nil
}

// Get implements TaskStore.
func (m *MemoryTaskStore) Get(_ context.Context, owner, id string) (*TaskRecord, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	if t := m.byID[id]; t != nil && t.rec.Owner == owner {
		return t.rec.Clone(), nil
	}
	return nil, ErrTaskNotFound
}

// List implements TaskStore.
func (m *MemoryTaskStore) List(_ context.Context, owner string) ([]*TaskRecord, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	var out []*TaskRecord
	for _, t := range m.byID {
		if t.rec.Owner == owner {
			out = append(out, t.rec.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *TaskRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// Update implements TaskStore.
func (m *MemoryTaskStore) Update(_ context.Context, rec *TaskRecord, lim TaskLimits) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	t := m.byID[rec.ID]
	if t == nil || t.rec.Owner != rec.Owner {
		return ErrTaskNotFound
	}
	if t.rec.Version != rec.Version {
		return ErrTaskConflict
	}
	old := t.rec
	rec.Version++
	rec.Seq, rec.Quota = old.Seq, old.Quota
	t.rec = rec.Clone()
	switch {
	case !old.Terminal() && rec.Terminal():
		m.deactivateLocked(rec.Quota)
		m.retireLocked(t, lim)
	case old.Terminal() && !rec.Terminal():
		t.rec = old
		m.unlinkLocked(t)
		t.rec = rec.Clone()
		m.active[rec.Quota]++
	case old.Terminal(): // stays in its place; its size may differ
		f := m.finished[rec.Quota]
		f.bytes += rec.Size - old.Size
		m.evictLocked(f, lim)
	}
	return nil
}

// Delete implements TaskStore.
func (m *MemoryTaskStore) Delete(_ context.Context, owner, id string) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	t := m.byID[id]
	if t == nil || t.rec.Owner != owner {
		return ErrTaskNotFound
	}
	m.removeLocked(t)
	return nil
}

// removeLocked deletes t and its counts.
func (m *MemoryTaskStore) removeLocked(t *memTask) {
	delete(m.byID, t.rec.ID)
	if t.rec.Terminal() {
		m.unlinkLocked(t)
	} else {
		m.deactivateLocked(t.rec.Quota)
	}
}

func (m *MemoryTaskStore) deactivateLocked(quota string) {
	if m.active[quota]--; m.active[quota] <= 0 {
		delete(m.active, quota)
	}
}

// retireLocked adds the terminal record t to its quota's finished list and
// deletes the oldest ones beyond the bounds.
func (m *MemoryTaskStore) retireLocked(t *memTask, lim TaskLimits) {
	q := t.rec.Quota
	f := m.finished[q]
	if f == nil {
		f = &finishedTasks{}
		m.finished[q] = f
	}
	t.fin = f.l.PushBack(t)
	f.bytes += t.rec.Size + TaskRecordOverhead
	m.evictLocked(f, lim)
}

// evictLocked deletes the oldest records of f beyond the bounds.
func (m *MemoryTaskStore) evictLocked(f *finishedTasks, lim TaskLimits) {
	maxN, maxB := lim.MaxFinishedTasks, lim.MaxFinishedBytes
	for f.l.Len() > 0 && ((maxN > 0 && f.l.Len() > maxN) || (maxB > 0 && f.bytes > maxB)) {
		old := f.l.Front().Value.(*memTask)
		delete(m.byID, old.rec.ID)
		m.unlinkLocked(old)
	}
}

// unlinkLocked takes a terminal record out of its quota's finished list.
func (m *MemoryTaskStore) unlinkLocked(t *memTask) {
	if t.fin == nil {
		return
	}
	f := m.finished[t.rec.Quota]
	f.l.Remove(t.fin)
	f.bytes -= t.rec.Size + TaskRecordOverhead
	t.fin = nil
	if f.l.Len() == 0 {
		delete(m.finished, t.rec.Quota)
	}
}

// purgeLocked deletes the expired records.
func (m *MemoryTaskStore) purgeLocked(now time.Time) {
	if m.nextExpiry.IsZero() || now.Before(m.nextExpiry) {
		return
	}
	m.nextExpiry = time.Time{}
	for _, t := range m.byID {
		exp := t.rec.ExpiresAt
		switch {
		case exp.IsZero():
		case !now.Before(exp):
			m.removeLocked(t)
		case m.nextExpiry.IsZero() || exp.Before(m.nextExpiry):
			m.nextExpiry = exp
		}
	}
}
