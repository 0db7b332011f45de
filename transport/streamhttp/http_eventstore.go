package streamhttp

import (
	"context"
	"errors"
	"sync"
)

// EventStore keeps the SSE events a Handler sends, so that a client
// whose connection dropped can resume a stream with GET and Last-Event-ID
// and receive what it missed. Event ids are chosen by the handler; the
// store sees each stream as a sequence of events numbered 1, 2, 3, ...
//
// Implementations must be safe for concurrent use. A store shared by
// several handlers must keep sessions apart by sessionID (ids are random).
type EventStore interface {
	// Append stores event seq of a stream; seqs of one stream are appended
	// in increasing order without gaps. data must be copied if kept.
	Append(ctx context.Context, sessionID, streamID string, seq uint64, data []byte) error
	// Replay calls fn, in order, for each stored event of the stream whose
	// seq is greater than after, and returns fn's first error. It returns
	// ErrEventsLost when some of those events are no longer stored. A
	// stream the store has never seen has no events (after must be 0).
	Replay(ctx context.Context, sessionID, streamID string, after uint64, fn func(seq uint64, data []byte) error) error
	// SessionClosed discards the events of a session that has ended.
	SessionClosed(ctx context.Context, sessionID string) error
}

// ErrEventsLost is returned by EventStore.Replay when events a client asks
// for are no longer stored (evicted, or never seen).
var ErrEventsLost = errors.New("transport: events after Last-Event-ID are no longer available")

// DefaultEventStoreBytes is the default bound of a MemoryEventStore: the
// bytes of event data kept per session.
const DefaultEventStoreBytes = 1 << 20

// MemoryEventStoreOptions configures NewMemoryEventStore (nil = defaults).
type MemoryEventStoreOptions struct {
	// MaxBytesPerSession bounds the event data kept per session; the
	// oldest events of the session (across its streams) are evicted
	// first, but the newest event is always kept. Zero or negative means
	// DefaultEventStoreBytes.
	MaxBytesPerSession int
}

// MemoryEventStore is the in-memory EventStore a Handler uses by
// default: bounded per session, forgotten when the session ends.
type MemoryEventStore struct {
	max      int
	mu       sync.Mutex
	sessions map[string]*memSession
}

var _ EventStore = (*MemoryEventStore)(nil)

type memSession struct {
	bytes   int
	streams map[string]*memStream
	order   []memRef // events in append order, oldest first (for eviction)
	head    int      // order[:head] are evicted
}

type memRef struct {
	stream *memStream
	seq    uint64
}

type memStream struct {
	first  uint64   // seq of events[0]
	events [][]byte // consecutive seqs from first
	last   uint64   // highest seq appended (0: none)
}

// NewMemoryEventStore returns an empty in-memory store; opts may be nil.
func NewMemoryEventStore(opts *MemoryEventStoreOptions) *MemoryEventStore {
	m := &MemoryEventStore{max: DefaultEventStoreBytes, sessions: map[string]*memSession{}}
	if opts != nil && opts.MaxBytesPerSession > 0 {
		m.max = opts.MaxBytesPerSession
	}
	return m
}

// Append implements EventStore.
func (m *MemoryEventStore) Append(_ context.Context, sessionID, streamID string, seq uint64, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionID]
	if s == nil {
		s = &memSession{streams: map[string]*memStream{}}
		m.sessions[sessionID] = s
	}
	st := s.streams[streamID]
	if st == nil {
		st = &memStream{first: seq}
		s.streams[streamID] = st
	}
	if len(st.events) == 0 {
		st.first = seq
	} else if seq != st.first+uint64(len(st.events)) {
		return errors.New("transport: event store: seq out of order")
	}
	st.events = append(st.events, append([]byte(nil), data...))
	st.last = seq
	s.order = append(s.order, memRef{st, seq})
	s.bytes += len(data)
	for s.bytes > m.max && len(s.order)-s.head > 1 {
		ref := s.order[s.head]
		s.order[s.head] = memRef{}
		s.head++
		// Events are evicted in append order, so ref is its stream's oldest.
		s.bytes -= len(ref.stream.events[0])
		ref.stream.events[0] = nil
		ref.stream.events = ref.stream.events[1:]
		ref.stream.first++
	}
	if s.head > 64 && s.head > len(s.order)/2 {
		s.order = append([]memRef(nil), s.order[s.head:]...)
		s.head = 0
	}
	return nil
}

// Replay implements EventStore.
func (m *MemoryEventStore) Replay(ctx context.Context, sessionID, streamID string, after uint64, fn func(seq uint64, data []byte) error) error {
	m.mu.Lock()
	var events [][]byte
	var first uint64
	s := m.sessions[sessionID]
	var st *memStream
	if s != nil {
		st = s.streams[streamID]
	}
	switch {
	case st == nil:
		m.mu.Unlock()
		if after == 0 {
			return nil
		}
		return ErrEventsLost
	case after > st.last:
		m.mu.Unlock()
		return ErrEventsLost // an id this stream never had
	case after+1 < st.first && after < st.last:
		m.mu.Unlock()
		return ErrEventsLost
	}
	if after >= st.first {
		events = st.events[after-st.first+1:]
		first = after + 1
	} else {
		events = st.events
		first = st.first
	}
	events = append([][]byte(nil), events...) // the slice, not the data: events are never modified
	m.mu.Unlock()
	for i, e := range events {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(first+uint64(i), e); err != nil {
			return err
		}
	}
	return nil
}

// SessionClosed implements EventStore.
func (m *MemoryEventStore) SessionClosed(_ context.Context, sessionID string) error {
	m.mu.Lock()
	delete(m.sessions, sessionID)
	m.mu.Unlock()
	return nil
}
