package streamhttp

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	"github.com/keelmcp/keel/transport"
)

// proxyList is a parsed Options.TrustedProxies (or
// ListenerOptions.TrustedProxies).
type proxyList []netip.Prefix

// parseProxies parses addresses ("10.0.0.1", "::1") and CIDR prefixes
// ("10.0.0.0/8", "2001:db8::/32"); field names the option in the error.
// An IPv4-mapped address or prefix ("::ffff:10.0.0.0/104") is taken as
// the IPv4 one it maps (10.0.0.0/8), as addresses are compared unmapped;
// a mapped prefix shorter than /96, which would cover IPv6 addresses as
// well, is an error.
func parseProxies(field string, list []string) (proxyList, error) {
	out := make(proxyList, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			if p.Addr().Is4In6() {
				if p.Bits() < 96 {
					return nil, fmt.Errorf("transport: %s: %q is an IPv4-mapped prefix shorter than /96", field, s)
				}
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(strings.Trim(s, "[]"))
		if err != nil {
			return nil, fmt.Errorf("transport: %s: %q is neither an IP address nor a CIDR prefix", field, s)
		}
		a = a.Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// contains reports whether a is one of the proxies.
func (l proxyList) contains(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range l {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// maxForwardedHops bounds the hops of Forwarded or X-Forwarded-For that
// are examined, from the right: a client cannot make the server walk a
// long list.
const maxForwardedHops = 16

// DefaultTrustedProxyHeader is the header a trusted proxy is read from
// when Options.TrustedProxyHeader is empty.
const DefaultTrustedProxyHeader = "X-Forwarded-For"

// proxyHeader returns the canonical name of the header the trusted
// proxies set (Options.TrustedProxyHeader; "" = DefaultTrustedProxyHeader).
func proxyHeader(name string) string {
	if name = strings.TrimSpace(name); name == "" {
		return DefaultTrustedProxyHeader
	}
	return http.CanonicalHeaderKey(name)
}

// clientAddr returns the address a request comes from: its connection's
// remote address, unless that is a trusted proxy; then the hops the
// proxies appended to header (Forwarded: its for= values; any other
// header: a comma-separated list of addresses, as X-Forwarded-For) are
// read from the right, and the first hop that is not a trusted proxy is
// the client. Only that header is read: another forwarding header the
// client sent, which a proxy passes through unchanged, is never believed.
// A hop that does not parse ends the walk at the last address known (the
// proxy that forwarded it), and so does a list of trusted proxies only.
// Headers are never read from a peer that is not a trusted proxy.
func (l proxyList) clientAddr(r *http.Request, header string) netip.Addr {
	addr := remoteIP(r.RemoteAddr)
	if len(l) == 0 || !addr.IsValid() || !l.contains(addr) {
		return addr
	}
	var hops []string
	if header == "Forwarded" {
		hops = forwardedFor(r.Header.Values(header))
	} else {
		hops = lastHops(r.Header.Values(header))
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			return addr
		}
		addr = a
		if !l.contains(a) {
			return a
		}
	}
	return addr
}

// remoteIP parses an http.Request.RemoteAddr ("ip:port", or an IP).
func remoteIP(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(s)
	return a.Unmap()
}

// lastHops returns the last maxForwardedHops comma-separated elements of
// the header values, in order.
func lastHops(values []string) []string {
	var hops []string
	for i := len(values) - 1; i >= 0 && len(hops) < maxForwardedHops; i-- {
		v := values[i]
		for len(hops) < maxForwardedHops {
			j := strings.LastIndexByte(v, ',')
			hops = append(hops, strings.TrimSpace(v[j+1:]))
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
	for i, j := 0, len(hops)-1; i < j; i, j = i+1, j-1 {
		hops[i], hops[j] = hops[j], hops[i]
	}
	return hops
}

// forwardedFor returns the for= values of the last maxForwardedHops
// elements of Forwarded header values (RFC 7239), in order; an element
// without for= gives "".
func forwardedFor(values []string) []string {
	hops := lastHops(values)
	for i, el := range hops {
		v := ""
		for pair := range strings.SplitSeq(el, ";") {
			k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if ok && strings.EqualFold(k, "for") {
				v = strings.Trim(val, `"`)
			}
		}
		hops[i] = v
	}
	return hops
}

// parseHop parses one forwarded hop: an IP, "ip:port", "[ipv6]" or
// "[ipv6]:port". Obfuscated identifiers and "unknown" do not parse.
func parseHop(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// peerOf returns who a request comes from: the verified bearer token's
// subject or client id (RequireBearer), else the remote address through
// the trusted proxies (an IPv6 address by its /64).
func (h *Handler) peerOf(r *http.Request) transport.Peer {
	addr := h.proxies.clientAddr(r, h.proxyHeader)
	if p, ok := transport.PeerOfToken(TokenInfoFromContext(r.Context())); ok {
		p.Addr = addr
		return p
	}
	if addr.IsValid() {
		return transport.PeerOfAddr(addr)
	}
	// Not an IP (a Unix socket): the connections share one peer.
	k := transport.PeerKeyAddr + r.RemoteAddr
	return transport.Peer{Key: k[:min(len(k), transport.MaxPeerKeyBytes)]}
}

// peerCounts counts what each peer holds of one bounded resource.
type peerCounts struct {
	mu sync.Mutex
	n  map[string]int // only peers holding some
}

// acquire counts one more for key unless key holds max already (max <= 0:
// no bound); it returns false when refused.
func (c *peerCounts) acquire(key string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if max > 0 && c.n[key] >= max {
		return false
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return true
}

// release gives back one count of key.
func (c *peerCounts) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.n[key] - 1; n > 0 {
		c.n[key] = n
	} else {
		delete(c.n, key)
	}
}

// count returns what key holds.
func (c *peerCounts) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}
