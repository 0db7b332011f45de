package streamhttp

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"github.com/keelmcp/keel/transport"
)

// Defaults of ListenerOptions.
const (
	// DefaultMaxConns bounds the open connections of a LimitListener:
	// room for every stream of DefaultMaxStreams and some idle
	// connections, but never more than nine tenths of the process's
	// open-file limit (RLIMIT_NOFILE, where the system has one), so that
	// the process keeps descriptors for its own files and clients.
	DefaultMaxConns = DefaultMaxStreams + 480
	// DefaultMaxConnsPerPeer bounds the open connections from one peer
	// address (an IPv6 address by its /64): room for the streams one peer
	// may hold (DefaultMaxStreamsPerPeer) and a few idle ones, but never
	// more than a tenth of MaxConns (at least 1), so that one address
	// cannot take every connection when MaxConns is small (as under a
	// low open-file limit).
	DefaultMaxConnsPerPeer = DefaultMaxStreamsPerPeer + 24
)

// ListenerOptions configure LimitListener. Nil means all defaults.
type ListenerOptions struct {
	// MaxConns bounds the connections open at once, all peers together
	// (0 = DefaultMaxConns, capped by the open-file limit; negative = no
	// bound).
	MaxConns int
	// MaxConnsPerPeer bounds the connections open at once from one remote
	// address, an IPv6 address counting by its /64 prefix (0 =
	// DefaultMaxConnsPerPeer, or a tenth of MaxConns if that is less, at
	// least 1; negative = no bound). A value above a bounded MaxConns is
	// lowered to MaxConns.
	MaxConnsPerPeer int
	// TrustedProxies lists addresses or CIDR prefixes (as
	// Options.TrustedProxies) whose connections count only against
	// MaxConns: a reverse proxy carries the connections of many peers.
	TrustedProxies []string
	// Logger receives a line for each refused connection, at level Warn,
	// at most LogsPerSecond a second (a burst of as many; suppressed lines
	// are counted in one line a second later); nil = slog.Default().
	Logger *slog.Logger
	// LogsPerSecond bounds the log lines of refused connections (0 =
	// DefaultRefusalLogsPerSecond; negative: none are logged).
	LogsPerSecond int
}

// LimitListener returns ln bounded in connections: a connection accepted
// beyond MaxConns, or beyond MaxConnsPerPeer from its address, is closed
// at once (the client sees the connection end before any response), with
// a rate-limited log line naming the limit, and Accept goes on with the
// next one. A connection counts until it is closed. Serve an
// http.Server (NewHTTPServer) on it; its idle timeout then frees the
// connections a peer leaves idle. LimitListener panics on an invalid
// TrustedProxies entry.
func LimitListener(ln net.Listener, opts *ListenerOptions) *LimitedListener {
	o := listenerDefaults(opts, openFileLimit())
	proxies, err := parseProxies("ListenerOptions.TrustedProxies", o.TrustedProxies)
	if err != nil {
		panic(err.Error())
	}
	return &LimitedListener{Listener: ln, opts: o, proxies: proxies,
		refusals: newRefusalLog(o.Logger, slog.LevelWarn, o.LogsPerSecond)}
}

// listenerDefaults returns opts (nil: all defaults) with its defaults
// filled in, for a process whose open-file limit is fileLimit (0: none
// known).
func listenerDefaults(opts *ListenerOptions, fileLimit int) ListenerOptions {
	var o ListenerOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
		if fileLimit > 0 {
			o.MaxConns = max(1, min(o.MaxConns, fileLimit/10*9))
		}
	}
	switch {
	case o.MaxConnsPerPeer == 0 && o.MaxConns > 0:
		o.MaxConnsPerPeer = max(1, min(DefaultMaxConnsPerPeer, o.MaxConns/10))
	case o.MaxConnsPerPeer == 0:
		o.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	case o.MaxConns > 0 && o.MaxConnsPerPeer > o.MaxConns:
		o.MaxConnsPerPeer = o.MaxConns
	}
	if o.LogsPerSecond == 0 {
		o.LogsPerSecond = DefaultRefusalLogsPerSecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// LimitedListener is a net.Listener bounded in connections (see
// LimitListener). It is safe for concurrent use.
type LimitedListener struct {
	net.Listener
	opts     ListenerOptions
	proxies  proxyList
	refusals *refusalLog

	mu     sync.Mutex
	total  int
	byPeer peerCounts
}

// Accept returns the next connection within the bounds; those beyond are
// closed here.
func (l *LimitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := ""
		if a := remoteIP(c.RemoteAddr().String()); a.IsValid() && !l.proxies.contains(a) {
			key = transport.PeerOfAddr(a).Key
		}
		if limit, max := l.admit(key); limit != "" {
			_ = c.Close()
			l.refusals.print("transport: connection refused: "+limit+" reached",
				slog.String("limit", limit), slog.Int("max", max), slog.String("peer", key))
			continue
		}
		return &limitConn{Conn: c, l: l, key: key}, nil
	}
}

// admit counts a connection of key ("" = counted in the total only), or
// returns the limit it would exceed.
func (l *LimitedListener) admit(key string) (limit string, max int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.opts.MaxConns; m > 0 && l.total >= m {
		return "MaxConns", m
	}
	if key != "" && !l.byPeer.acquire(key, l.opts.MaxConnsPerPeer) {
		return "MaxConnsPerPeer", l.opts.MaxConnsPerPeer
	}
	l.total++
	return "", 0
}

func (l *LimitedListener) release(key string) {
	l.mu.Lock()
	l.total--
	l.mu.Unlock()
	if key != "" {
		l.byPeer.release(key)
	}
}

// Close closes the listener; connections already accepted stay open.
func (l *LimitedListener) Close() error {
	l.refusals.close()
	return l.Listener.Close()
}

// limitConn is an accepted connection; closing it frees its count.
type limitConn struct {
	net.Conn
	l    *LimitedListener
	key  string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// CloseWrite shuts down the writing side of the connection, where the
// connection has one (*net.TCPConn, *net.UnixConn): net/http half-closes
// a connection this way before closing it after an error response, so
// that the client reads the response rather than a reset. Elsewhere it
// does nothing.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom copies r to the connection with the connection's own ReadFrom
// where it has one (*net.TCPConn: sendfile or splice), as net/http does
// for a connection it is not wrapped around.
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// MaxConns returns the bound on open connections (0: none).
func (l *LimitedListener) MaxConns() int { return max(l.opts.MaxConns, 0) }

// MaxConnsPerPeer returns the bound on open connections from one peer
// address (0: none).
func (l *LimitedListener) MaxConnsPerPeer() int { return max(l.opts.MaxConnsPerPeer, 0) }

// ConnCount returns the connections open now, all peers together.
func (l *LimitedListener) ConnCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// PeerConnCount returns the connections open now from the peer address a
// (an IPv6 address counts by its /64).
func (l *LimitedListener) PeerConnCount(a netip.Addr) int {
	return l.byPeer.count(transport.PeerOfAddr(a).Key)
}
