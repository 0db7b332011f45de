package otel

import (
	"hash/maphash"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// MaxLinkedRounds bounds, per client connection (and per Telemetry on the
// server side, for tasks), the input_required rounds and tasks whose
// starting span is remembered so that later rounds and task requests can
// link to it; past it the oldest is forgotten.
const MaxLinkedRounds = 1024

// LinkKindKey is the attribute of a span link that says how the linked
// span relates: LinkKindInputRound (the round of the same call that was
// answered input_required) or LinkKindTask (the call that created the
// task a tasks/* request is about).
const LinkKindKey = attribute.Key("keel.otel.link")

// Values of LinkKindKey.
const (
	// LinkKindInputRound marks the link of a later input_required round
	// to the round that was answered input_required.
	LinkKindInputRound = "input_round"
	// LinkKindTask marks the link of a tasks/* request to the call that
	// created the task.
	LinkKindTask = "task"
)

// roundLinks remembers the span of the round that received an
// input_required answer (by a hash of its requestState) and of the call
// that created a task (by task id), FIFO-bounded.
type roundLinks struct {
	mu    sync.Mutex
	seed  maphash.Seed
	byKey map[uint64]trace.SpanContext
	order []uint64 // insertion order, for eviction
}

func newRoundLinks() *roundLinks {
	return &roundLinks{seed: maphash.MakeSeed(), byKey: map[uint64]trace.SpanContext{}}
}

func (l *roundLinks) key(kind, s string) uint64 {
	return maphash.String(l.seed, kind+"\x00"+s)
}

func (l *roundLinks) put(kind, s string, sc trace.SpanContext) {
	if s == "" || !sc.IsValid() {
		return
	}
	k := l.key(kind, s)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.byKey[k]; !ok {
		if len(l.order) >= MaxLinkedRounds {
			delete(l.byKey, l.order[0])
			l.order = l.order[1:]
		}
		l.order = append(l.order, k)
	}
	l.byKey[k] = sc
}

func (l *roundLinks) get(kind, s string) (trace.SpanContext, bool) {
	if s == "" {
		return trace.SpanContext{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	sc, ok := l.byKey[l.key(kind, s)]
	return sc, ok
}
