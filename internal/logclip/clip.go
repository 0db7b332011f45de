// Package logclip bounds what a peer can make a process write to its log:
// the length of every value taken from a peer (Clip, Attr) and the number
// of lines one source writes (Bucket, and Handler, which applies both to
// every record).
package logclip

import (
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxPeerValue is how much of a value taken from a peer (a Host, an
// Origin, a session id, a client name) a log line carries.
const MaxPeerValue = 64

// Clip returns s cut to at most max bytes (at a rune boundary), followed
// by "...(N bytes)" naming the length of the original when it was cut.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "...(" + strconv.Itoa(len(s)) + " bytes)"
}

// Attr returns a string attribute with at most MaxPeerValue bytes of v,
// a value that came from a peer (see Clip).
func Attr(key, v string) slog.Attr {
	return slog.String(key, Clip(v, MaxPeerValue))
}

// Bucket is a token bucket of log lines: a burst of perSecond lines, then
// perSecond lines a second. The caller serializes its use.
type Bucket struct {
	perSecond float64 // <= 0: no limit
	tokens    float64
	last      time.Time
}

// NewBucket returns a full bucket of perSecond lines a second; perSecond
// <= 0 admits every line.
func NewBucket(perSecond int) Bucket {
	return Bucket{perSecond: float64(perSecond), tokens: float64(perSecond)}
}

// Take reports whether a line may be written at now, and takes its token.
func (b *Bucket) Take(now time.Time) bool {
	if b.perSecond <= 0 {
		return true
	}
	if !b.last.IsZero() {
		b.tokens = min(b.perSecond, b.tokens+now.Sub(b.last).Seconds()*b.perSecond)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Reporter is told how many lines a Limiter suppressed.
type Reporter interface {
	// Report is called once a second at most, with the number of lines
	// suppressed since the last call.
	Report(suppressed int64)
}

// Limiter rate-limits log lines with a Bucket, and counts the lines it
// refuses: a second after the first of them, its Reporter is told their
// number (then the count starts again). It is safe for concurrent use.
type Limiter struct {
	perSecond  int
	report     Reporter
	mu         sync.Mutex
	bucket     Bucket
	suppressed int64
	timer      *time.Timer // pending report
	closed     bool
}

// NewLimiter returns a Limiter of perSecond lines a second (with a burst
// of as many; <= 0: no limit) that reports suppressed lines to report.
func NewLimiter(perSecond int, report Reporter) *Limiter {
	return &Limiter{perSecond: perSecond, report: report, bucket: NewBucket(perSecond)}
}

// Allow reports whether a line may be written now; a refused one is
// counted for the report.
func (l *Limiter) Allow() bool {
	if l.perSecond <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bucket.Take(time.Now()) {
		return true
	}
	l.suppressed++
	if l.timer == nil && !l.closed {
		l.timer = time.AfterFunc(time.Second, l.flush)
	}
	return false
}

func (l *Limiter) flush() {
	l.mu.Lock()
	n := l.suppressed
	l.suppressed, l.timer = 0, nil
	l.mu.Unlock()
	if n > 0 {
		l.report.Report(n)
	}
}

// Close stops a pending report; lines refused afterwards are not
// reported.
func (l *Limiter) Close() {
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.mu.Unlock()
}

// rested reports whether the limiter's bucket has refilled by now and no
// report is pending: forgetting it then gives nothing back that waiting
// would not have.
func (l *Limiter) rested(now time.Time) bool {
	if l.perSecond <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := &l.bucket
	return l.timer == nil && (b.last.IsZero() || b.tokens+now.Sub(b.last).Seconds()*b.perSecond >= b.perSecond)
}
