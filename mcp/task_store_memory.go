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
	activeAll  int                       // records not terminal, all quotas (MaxTasksTotal)
	bytesAll   int64                     // bytes of terminal records, all quotas (MaxFinishedBytesTotal)
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
func (m *MemoryTaskStore) Create(ctx context.Context, rec *TaskRecord, lim TaskLimits) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.purgeLocked(now)
	if m.byID[rec.ID] != nil {
		return fmt.Errorf("%w: %q", ErrTaskExists, rec.ID)
	}
	if err := m.admitLocked(rec, lim); err != nil {
		return err
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
		m.activateLocked(rec.Quota)
	}
	return nil
}

// admitLocked returns the TaskLimitError of the bound a new record rec
// would exceed, or nil.
func (m *MemoryTaskStore) admitLocked(rec *TaskRecord, lim TaskLimits) error {
	if rec.Terminal() {
		return m.roomLocked(rec, lim)
	}
	switch {
	case lim.MaxTasks > 0 && m.active[rec.Quota] >= lim.MaxTasks:
		return &TaskLimitError{Limit: TaskLimitMaxTasks, Max: int64(lim.MaxTasks)}
	case lim.MaxTasksTotal > 0 && m.activeAll >= lim.MaxTasksTotal:
		return &TaskLimitError{Limit: TaskLimitMaxTasksTotal, Max: int64(lim.MaxTasksTotal)}
	case lim.MaxFinishedBytesTotal > 0 && m.bytesAll+TaskRecordOverhead > lim.MaxFinishedBytesTotal:
		return &TaskLimitError{Limit: TaskLimitMaxFinishedBytesTotal, Max: lim.MaxFinishedBytesTotal}
	}
	return nil
}

// roomLocked returns the TaskLimitError of MaxFinishedBytesTotal when rec,
// becoming terminal with a Size over zero, would not fit even once the
// other finished records of its quota were deleted; else nil.
func (m *MemoryTaskStore) roomLocked(rec *TaskRecord, lim TaskLimits) error {
	maxAll := lim.MaxFinishedBytesTotal
	if maxAll <= 0 || rec.Size <= 0 {
		return nil
	}
	var own int64
	if f := m.finished[rec.Quota]; f != nil {
		own = f.bytes
	}
	if m.bytesAll-own+rec.Size+TaskRecordOverhead > maxAll {
		return &TaskLimitError{Limit: TaskLimitMaxFinishedBytesTotal, Max: maxAll}
	}
	return nil
}

// Get implements TaskStore.
func (m *MemoryTaskStore) Get(ctx context.Context, owner, id string) (*TaskRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
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
func (m *MemoryTaskStore) List(ctx context.Context, owner string) ([]*TaskRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
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
func (m *MemoryTaskStore) Update(ctx context.Context, rec *TaskRecord, lim TaskLimits) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
	if !old.Terminal() && rec.Terminal() {
		rec.Quota = old.Quota
		if err := m.roomLocked(rec, lim); err != nil {
			return err
		}
	}
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
		m.activateLocked(rec.Quota)
	case old.Terminal(): // stays in its place; its size may differ
		f := m.finished[rec.Quota]
		f.bytes += rec.Size - old.Size
		m.bytesAll += rec.Size - old.Size
		m.evictLocked(f, lim)
	}
	return nil
}

// Delete implements TaskStore.
func (m *MemoryTaskStore) Delete(ctx context.Context, owner, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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

func (m *MemoryTaskStore) activateLocked(quota string) {
	m.active[quota]++
	m.activeAll++
}

func (m *MemoryTaskStore) deactivateLocked(quota string) {
	m.activeAll--
	if m.active[quota]--; m.active[quota] <= 0 {
		delete(m.active, quota)
	}
}

// retireLocked adds the terminal record t to its quota's finished list and
// deletes the oldest ones beyond the bounds: first those that make room
// for it within MaxFinishedBytesTotal, then those beyond the quota's own
// bounds (t itself last). Only t's quota loses records.
func (m *MemoryTaskStore) retireLocked(t *memTask, lim TaskLimits) {
	q := t.rec.Quota
	size := t.rec.Size + TaskRecordOverhead
	if maxAll := lim.MaxFinishedBytesTotal; maxAll > 0 {
		for f := m.finished[q]; f != nil && m.bytesAll+size > maxAll; f = m.finished[q] {
			m.dropLocked(f.l.Front().Value.(*memTask))
		}
	}
	f := m.finished[q]
	if f == nil {
		f = &finishedTasks{}
		m.finished[q] = f
	}
	t.fin = f.l.PushBack(t)
	f.bytes += size
	m.bytesAll += size
	m.evictLocked(f, lim)
}

// evictLocked deletes the oldest records of f beyond the bounds.
func (m *MemoryTaskStore) evictLocked(f *finishedTasks, lim TaskLimits) {
	maxN, maxB, maxAll := lim.MaxFinishedTasks, lim.MaxFinishedBytes, lim.MaxFinishedBytesTotal
	for f.l.Len() > 0 && ((maxN > 0 && f.l.Len() > maxN) || (maxB > 0 && f.bytes > maxB) || (maxAll > 0 && m.bytesAll > maxAll)) {
		m.dropLocked(f.l.Front().Value.(*memTask))
	}
}

// dropLocked deletes the terminal record old.
func (m *MemoryTaskStore) dropLocked(old *memTask) {
	delete(m.byID, old.rec.ID)
	m.unlinkLocked(old)
}

// unlinkLocked takes a terminal record out of its quota's finished list.
func (m *MemoryTaskStore) unlinkLocked(t *memTask) {
	if t.fin == nil {
		return
	}
	f := m.finished[t.rec.Quota]
	f.l.Remove(t.fin)
	f.bytes -= t.rec.Size + TaskRecordOverhead
	m.bytesAll -= t.rec.Size + TaskRecordOverhead
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
