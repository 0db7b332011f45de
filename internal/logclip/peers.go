package logclip

import (
	"log/slog"
	"sync"
)

// Peers shares one line budget among the scopes of one peer: however many
// sessions a peer opens, they write at most the handler's lines a second
// together. A peer's shared budget lives while one of its scopes does, so
// Peers holds no more entries than there are live scopes.
type Peers struct {
	l  *slog.Logger
	mu sync.Mutex
	m  map[string]*peerScope
}

type peerScope struct {
	s    *Handler // the peer's scope: its limit is shared
	refs int
}

// NewPeers returns the per-peer scopes of l (whose handler, when it is a
// Handler, gives the limit and clipping).
func NewPeers(l *slog.Logger) *Peers { return &Peers{l: l, m: map[string]*peerScope{}} }

// Scope returns a logger with attrs added whose lines count against the
// budget of peer key, and the function to call once the scope ends. An
// empty key, or a logger whose handler is not a Handler, gives a scope of
// its own (Scope).
func (p *Peers) Scope(key string, attrs ...slog.Attr) (*slog.Logger, func()) {
	h, ok := p.l.Handler().(*Handler)
	if key == "" || !ok {
		return Scope(p.l, attrs...), func() {}
	}
	p.mu.Lock()
	ps := p.m[key]
	if ps == nil {
		ps = &peerScope{s: newScope(h.next, h.base, h.maxValue, h.lim.perSecond)}
		p.m[key] = ps
	}
	ps.refs++
	p.mu.Unlock()
	scoped := &Handler{next: h.next.WithAttrs(h.clipAttrs(attrs)), base: h.base, maxValue: h.maxValue, lim: ps.s.lim}
	var once sync.Once
	return slog.New(scoped), func() {
		once.Do(func() {
			p.mu.Lock()
			if ps.refs--; ps.refs == 0 {
				delete(p.m, key)
			}
			p.mu.Unlock()
		})
	}
}

// Len returns how many peers have live scopes.
func (p *Peers) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
