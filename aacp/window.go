package aacp

import (
	"context"
	"slices"
	"sync"
)

// window is the receiver side of one source→target pair: which seqs
// arrived, and the cumulative ack, which only advances over the contiguous
// prefix. A seq above a gap is remembered in above until the gap is filled
// (by a retransmission), then ack jumps over all of them.
type window struct {
	source, target string

	mu     sync.Mutex
	loaded bool
	ack    uint64              // every seq <= ack was received
	above  map[uint64]struct{} // received seqs > ack+1
	top    uint64              // highest seq in above (meaningful while above is not empty)
	dirty  bool                // ack must be (re)written to the ledger
	limit  int                 // bound of len(above) for seqs beyond top
	// refused counts the seqs the window refused for lack of room (left
	// in the ledger) since it last reopened; refusedTop is the highest.
	refused    int
	refusedTop uint64
	refusedMin uint64 // the lowest seq refused since the window last reopened
}

// load reads the persisted ack the first time the window is used.
// w.mu must be held.
func (w *window) load(ctx context.Context, s Store) error {
	if w.loaded {
		return nil
	}
	ack, err := s.GetAck(ctx, w.source, w.target)
	if err != nil {
		return err
	}
	w.ack = max(w.ack, ack)
	w.loaded = true
	return nil
}

// seen reports whether seq was received. w.mu must be held.
func (w *window) seen(seq uint64) bool {
	if seq <= w.ack {
		return true
	}
	_, ok := w.above[seq]
	return ok
}

// fits reports whether seq can be recorded without exceeding the window:
// the next expected seq always fits, and so does a seq that fills a gap
// below the highest one received, up to twice the limit (otherwise a full
// window would refuse the very messages that let it advance). w.mu must
// be held.
func (w *window) fits(seq uint64) bool {
	switch {
	case seq <= w.ack+1 || len(w.above) < w.limit:
		return true
	case seq < w.top:
		return len(w.above) < 2*w.limit
	}
	return false
}

// reopen reports, once, that the window has room again (at most half its
// limit buffered), or that the seq it waits for next is one it refused
// (then nothing else would ever advance it), after it refused seqs: their
// messages, left in the ledger, must be claimed now rather than at their
// retransmission time. w.mu must be held.
// It returns how many seqs were refused (0: nothing to claim).
func (w *window) reopen() int {
	if w.refused == 0 || (len(w.above) > w.limit/2 && w.refusedMin > w.ack+1) {
		return 0
	}
	n := w.refused
	w.refused = 0
	return n
}

// refuse records that seq was refused for lack of room. w.mu must be held.
func (w *window) refuse(seq uint64) {
	if w.refused == 0 || seq < w.refusedMin {
		w.refusedMin = seq
	}
	w.refused++
	w.refusedTop = max(w.refusedTop, seq)
}

// awaits reports whether the highest seq the window refused has not
// arrived since and the window has room for it. w.mu must be held.
func (w *window) awaits() bool {
	return w.refused == 0 && !w.seen(w.refusedTop)
}

// mark records the receipt of seq and advances ack over the contiguous
// prefix. w.mu must be held.
func (w *window) mark(seq uint64) {
	switch {
	case seq <= w.ack:
		w.dirty = true // a duplicate: the sender missed our ack, repeat it
		return
	case seq == w.ack+1:
		w.ack = seq
		for len(w.above) > 0 {
			if _, ok := w.above[w.ack+1]; !ok {
				break
			}
			delete(w.above, w.ack+1)
			w.ack++
		}
		w.dirty = true
	default:
		if w.above == nil {
			w.above = map[uint64]struct{}{}
		}
		if len(w.above) == 0 || seq > w.top {
			w.top = seq
		}
		w.above[seq] = struct{}{}
	}
}

// skipTo treats every seq up to seq as received: the gap below it can never
// be filled (its messages are gone from the ledger). w.mu must be held.
func (w *window) skipTo(seq uint64) {
	if seq <= w.ack {
		return
	}
	for s := range w.above {
		if s <= seq {
			delete(w.above, s)
		}
	}
	w.ack = seq - 1
	w.mark(seq) // advances ack to seq and over what follows
}

// gaps returns the missing seqs between ack and the highest received one
// (at most limit of them). w.mu must be held.
func (w *window) gaps(limit int) []uint64 {
	if len(w.above) == 0 {
		return nil
	}
	hi := w.ack
	for s := range w.above {
		hi = max(hi, s)
	}
	var out []uint64
	for s := w.ack + 1; s < hi && len(out) < limit; s++ {
		if _, ok := w.above[s]; !ok {
			out = append(out, s)
		}
	}
	return out
}

// session is the sender side of one source→target pair: the last seq used
// and the highest ack the peer sent back.
type session struct {
	source, target string

	mu      sync.Mutex // held while a seq is handed out and stored
	loaded  bool
	last    uint64
	peerAck uint64
}

// load reads the persisted last seq the first time the session is used.
// s.mu must be held.
func (s *session) load(ctx context.Context, st Store) error {
	if s.loaded {
		return nil
	}
	last, err := st.GetLastSequence(ctx, s.source, s.target)
	if err != nil {
		return err
	}
	s.last = max(s.last, last)
	s.loaded = true
	return nil
}

// SessionInfo describes the sender side of one source→target pair: its
// next sequence number and the last acknowledgment.
type SessionInfo struct {
	Source, Target string
	// NextSeq is the seq the next message will get.
	NextSeq uint64
	// LastAck is the highest cumulative ack received from the target.
	LastAck uint64
}

// WindowInfo describes the receiver side of one source→target pair.
type WindowInfo struct {
	Source, Target string
	// Ack is the cumulative acknowledgment: every seq up to it arrived.
	Ack uint64
	// Gaps are missing seqs below the highest one received (at most 64).
	Gaps []uint64
	// Buffered is how many seqs above a gap arrived.
	Buffered int
}

func (w *window) info() WindowInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := w.gaps(64)
	slices.Sort(g)
	return WindowInfo{Source: w.source, Target: w.target, Ack: w.ack, Gaps: g, Buffered: len(w.above)}
}
