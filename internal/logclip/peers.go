package logclip

import (
	"log/slog"
	"sync"
	"time"
)

// Peers gives each peer one line budget for all its scopes, and all peers
// together a budget of their own:
//
//   - however many sessions or requests a peer opens, at once or one
//     after another, its lines together stay within the handler's lines a
//     second: a peer's budget outlives its scopes until it has refilled;
//   - the lines of every peer together stay within GlobalFactor times
//     that, so that many peers (the addresses of one IPv6 prefix) cannot
//     flood the log either;
//   - at most MaxPeers budgets are kept; past it, the peers without one
//     share a single budget until idle ones are forgotten.
type Peers struct {
	l      *slog.Logger
	h      *Handler   // l's handler when it is a Handler, else nil
	global *Limiter   // every peer's lines together
	crowd  *peerScope // the peers past MaxPeers
	mu     sync.Mutex
	m      map[string]*peerScope
}

// Bounds of Peers.
const (
	// GlobalFactor is how many peers' worth of lines a second every peer
	// together may write.
	GlobalFactor = 10
	// MaxPeers bounds the peer budgets kept at once.
	MaxPeers = 4096
)

type peerScope struct {
	s      *Handler     // the peer's scope: its limit is shared
	logger *slog.Logger // s as a logger, for scopes without attributes of their own
	refs   int
}

// NewPeers returns the per-peer scopes of l (whose handler, when it is a
// Handler, gives the limit and clipping).
func NewPeers(l *slog.Logger) *Peers {
	p := &Peers{l: l, m: map[string]*peerScope{}}
	if h, ok := l.Handler().(*Handler); ok && h.lim.perSecond > 0 {
		p.h = h
		p.global = newScope(h.next, h.base, h.maxValue, GlobalFactor*h.lim.perSecond).lim
		p.crowd = p.newPeer()
	}
	return p
}

func (p *Peers) newPeer() *peerScope {
	s := newScope(p.h.next, p.h.base, p.h.maxValue, p.h.lim.perSecond)
	s.global = p.global
	return &peerScope{s: s, logger: slog.New(s)}
}

// Lease is a scope's hold on its peer's budget, which is not forgotten
// while held; Release ends it, once.
type Lease struct {
	p  *Peers
	ps *peerScope
}

// Release ends the lease.
func (l Lease) Release() {
	if l.ps == nil {
		return
	}
	l.p.mu.Lock()
	l.ps.refs--
	l.p.mu.Unlock()
}

// Scope returns a logger with attrs added whose lines count against the
// budget of peer key (and every peer's), and its Lease, to release once
// the scope ends. An empty key gives a scope of its own (Scope); a logger
// whose handler is not a Handler, or has no limit, gets l with attrs.
func (p *Peers) Scope(key string, attrs ...slog.Attr) (*slog.Logger, Lease) {
	if p.h == nil {
		return p.l.With(attrsAny(attrs)...), Lease{}
	}
	if key == "" {
		return Scope(p.l, attrs...), Lease{}
	}
	p.mu.Lock()
	ps := p.m[key]
	if ps == nil {
		if len(p.m) >= MaxPeers {
			p.forgetRestedLocked(time.Now())
		}
		if len(p.m) >= MaxPeers {
			ps = p.crowd
		} else {
			ps = p.newPeer()
			p.m[key] = ps
		}
	}
	ps.refs++
	p.mu.Unlock()
	l := ps.logger
	if len(attrs) > 0 {
		l = slog.New(ps.s.WithAttrs(attrs))
	}
	return l, Lease{p: p, ps: ps}
}

// forgetRestedLocked drops the budgets of peers with no live scope whose
// budget has refilled. p.mu is held.
func (p *Peers) forgetRestedLocked(now time.Time) {
	for k, ps := range p.m {
		if ps.refs == 0 && ps.s.lim.rested(now) {
			delete(p.m, k)
		}
	}
}

// Len returns how many peer budgets are kept.
func (p *Peers) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

func attrsAny(attrs []slog.Attr) []any {
	out := make([]any, len(attrs))
	for i, a := range attrs {
		out[i] = a
	}
	return out
}
